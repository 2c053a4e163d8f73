// Module hooks (node:module register) for bench/harness/main-import.js: `electron` resolves to electron-stub.js,
// and every file module resolved is reported on the port main-import.js hands over, so it can count them.
const STUB = new URL('./electron-stub.js', import.meta.url).href;
let port = null;

export function initialize(data) {
  port = data.port;
}

export async function resolve(specifier, context, next) {
  if (specifier === 'electron') return { url: STUB, shortCircuit: true };
  const resolved = await next(specifier, context);
  if (resolved.url.startsWith('file:') && resolved.url !== STUB) port?.postMessage(resolved.url);
  return resolved;
}
