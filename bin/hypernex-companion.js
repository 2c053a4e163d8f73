#!/usr/bin/env node
// Entry of `npx hypernex-companion`. The TypeScript is compiled by `npm run build` (run by `npm ci` via prepare).

// Every acknowledged write is an fsync on libuv's pool; its default 4 threads queue them behind each other.
// Set before anything touches the pool, which is created on first use.
process.env.UV_THREADPOOL_SIZE ??= '16';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// One bundled file (scripts/bundle-server.js): much faster to load than the compiled modules one by one.
const cli = new URL('../dist/bundle/cli.js', import.meta.url);
if (!existsSync(fileURLToPath(cli))) {
  process.stderr.write(
    'hypernex-companion is not built yet: run `npm run build` (npm ci does it for you).\n',
  );
  process.exit(1);
}
const { main } = await import(cli.href);
process.exitCode = await main(process.argv.slice(2));
