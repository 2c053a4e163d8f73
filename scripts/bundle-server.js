// The command line and the desktop app's host process load the server from bundled files (dist/bundle/cli.js,
// dist/bundle/host-child.js, sharing one chunk): resolving and reading several hundred small module files took about
// a third of the host's startup. The compiled modules stay beside them: dist/main and dist/shared are the Electron
// main process (which loads nothing of dist/server), dist/server is for the tests and benchmarks. The password hasher
// is native code and is loaded from node_modules.
import { rm } from 'node:fs/promises';
import { rolldown } from 'rolldown';

await rm('dist/bundle', { recursive: true, force: true });
const bundle = await rolldown({
  input: { cli: 'dist/server/cli.js', 'host-child': 'dist/main/host-child.js' },
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
