#!/usr/bin/env node
// Entry of `npx hypernex-companion`. The TypeScript is compiled by `npm run build` (run by `npm ci` via prepare).

// Every acknowledged write is an fsync on libuv's pool; its default 4 threads queue them behind each other.
// Set before anything touches the pool, which is created on first use.
process.env.UV_THREADPOOL_SIZE ??= '16';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const cli = new URL('../dist/server/cli.js', import.meta.url);
if (!existsSync(fileURLToPath(cli))) {
  process.stderr.write(
    'hypernex-companion is not built yet: run `npm run build` (npm ci does it for you).\n',
  );
  process.exit(1);
}
const { main } = await import(cli.href);
process.exitCode = await main(process.argv.slice(2));
