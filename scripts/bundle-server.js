// The command line loads the server from one bundled file (dist/bundle/cli.js): resolving and reading several
// hundred small module files took about a third of the host's startup. The compiled modules in dist/server stay
// for the Electron main process and the tests. The password hasher is native code and is loaded from node_modules.
import { rm } from 'node:fs/promises';
import { rolldown } from 'rolldown';

await rm('dist/bundle', { recursive: true, force: true });
const bundle = await rolldown({
  input: 'dist/server/cli.js',
  platform: 'node',
  external: ['@node-rs/argon2'],
  logLevel: 'warn',
  // depd (a Koa dependency) builds its wrappers with eval: known, harmless here, not ours to change.
  onwarn(warning, warn) {
    if (warning.code !== 'EVAL') warn(warning);
  },
});
await bundle.write({ dir: 'dist/bundle', format: 'esm', sourcemap: true });
await bundle.close();
