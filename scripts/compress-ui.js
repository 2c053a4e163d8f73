// Precompresses the built UI so the host serves it gzip/brotli-encoded to browsers that accept it (koa-send
// picks `file.br` / `file.gz` when present): ~3x fewer bytes over the LAN, no compression work per request.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const root = 'dist/renderer';
const worth = /\.(js|css|html|svg|json|map)$/;

function walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (worth.test(name) && !name.endsWith('.map')) {
      const data = readFileSync(path);
      writeFileSync(`${path}.gz`, gzipSync(data, { level: 9 }));
      writeFileSync(
        `${path}.br`,
        brotliCompressSync(data, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }),
      );
    }
  }
}

walk(root);
