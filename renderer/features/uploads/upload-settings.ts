/**
 * When an upload goes in parts. Files above `chunkThreshold` bytes use `uploadPart` with `chunkSize`-byte parts,
 * so a broken connection or a closed window costs at most one part. Both can be overridden per browser with
 * `localStorage['hnx.chunkThreshold']` and `localStorage['hnx.chunkSize']` (bytes), which the e2e tests use to
 * exercise resuming with small files.
 */
export interface UploadSettings {
  chunkThreshold: number;
  chunkSize: number;
}

const MIB = 1024 * 1024;
export const DEFAULT_UPLOAD_SETTINGS: UploadSettings = { chunkThreshold: 16 * MIB, chunkSize: 8 * MIB };
export const CHUNK_THRESHOLD_KEY = 'hnx.chunkThreshold';
export const CHUNK_SIZE_KEY = 'hnx.chunkSize';
/** Tiny parts would mean thousands of requests; the host also caps a set at 100 000 parts. */
const MIN_CHUNK_SIZE = 16 * 1024;

export function readUploadSettings(storage: Pick<Storage, 'getItem'> | null): UploadSettings {
  const threshold = positiveInt(read(storage, CHUNK_THRESHOLD_KEY));
  const size = positiveInt(read(storage, CHUNK_SIZE_KEY));
  return {
    chunkThreshold: threshold ?? DEFAULT_UPLOAD_SETTINGS.chunkThreshold,
    chunkSize: size === null ? DEFAULT_UPLOAD_SETTINGS.chunkSize : Math.max(MIN_CHUNK_SIZE, size),
  };
}

function read(storage: Pick<Storage, 'getItem'> | null, key: string): string | null {
  try {
    return storage?.getItem(key) ?? null;
  } catch {
    return null;
  }
}

function positiveInt(text: string | null): number | null {
  if (text === null || !/^\d{1,15}$/.test(text.trim())) return null;
  const value = Number(text.trim());
  return value > 0 ? value : null;
}

export function browserStorage(): Storage | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}
