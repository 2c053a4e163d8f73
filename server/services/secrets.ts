import { createHash, timingSafeEqual } from 'node:crypto';

/** SHA-256 of a secret: what the data folder keeps instead of tokens, codes and setup secrets. */
export function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** Compares a stored hex hash with a candidate digest in constant time. */
export function hashMatches(storedHex: string, candidate: Buffer): boolean {
  const stored = Buffer.from(storedHex, 'hex');
  return stored.length === candidate.length && timingSafeEqual(stored, candidate);
}
