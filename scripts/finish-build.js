// The sandboxed preload must be CommonJS while the rest of the package is ESM: mark its folder as such.
import { mkdirSync, writeFileSync } from 'node:fs';

mkdirSync('dist/main/preload', { recursive: true });
writeFileSync('dist/main/preload/package.json', JSON.stringify({ type: 'commonjs' }, null, 2) + '\n');
