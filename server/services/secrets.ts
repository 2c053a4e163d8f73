import * as crypto from 'node:crypto';
import { createHash, timingSafeEqual } from 'node:crypto';

/** Node's one-shot digest (20.12 and later): a few times cheaper than a Hash object for short input. */
const oneShot = (crypto as { hash?: typeof crypto.hash }).hash;

/** SHA-256 of a secret: what the data folder keeps instead of tokens, codes and setup secrets. */
export const sha256: (text: string) => Buffer =
  typeof oneShot === 'function'
    ? (text) => oneShot('sha256', text, 'buffer')
    : (text) => createHash('sha256').update(text, 'utf8').digest();

/** Compares a stored hex hash with a candidate digest in constant time. */
export function hashMatches(storedHex: string, candidate: Buffer): boolean {
  const stored = Buffer.from(storedHex, 'hex');
  return stored.length === candidate.length && timingSafeEqual(stored, candidate);
}
