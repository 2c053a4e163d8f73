#!/usr/bin/env node
// Entry of `npx hypernex-companion`. The TypeScript is compiled by `npm run build` (run by `npm ci` via prepare).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const cli = new URL('../dist/server/cli.js', import.meta.url);
if (!existsSync(fileURLToPath(cli))) {
  process.stderr.write('hypernex-companion is not built yet: run `npm run build` (npm ci does it for you).\n');
  process.exit(1);
}
const { main } = await import(cli.href);
process.exitCode = await main(process.argv.slice(2));
