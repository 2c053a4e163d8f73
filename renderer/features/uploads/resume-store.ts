import type { MetaValues } from './meta-form.js';

/**
 * Chunked uploads the host holds parts of, remembered in localStorage so a reload, a crash or a closed window
 * does not lose them. The browser cannot reopen a file by itself: the person picks it again, and it counts as the
 * same file only when name, size and last-modified time all match.
 */

export type UploadKind = 'media' | 'avatar' | 'world' | 'script';

export interface SentMeta {
  field: 'avatarMeta' | 'worldMeta';
  json: string;
}

export interface FileIdentity {
  name: string;
  size: number;
  lastModified: number;
}

export interface ResumeRecord extends FileIdentity {
  userId: string;
  chunkId: string;
  chunkSize: number;
  amountOfChunks: number;
  kind: UploadKind;
  meta: SentMeta | null;
  /** What the upload list calls it, e.g. `New avatar "Robot"`. */
  title: string;
  /** The form as filled in, to reopen it after a refusal. */
  values: MetaValues | null;
  /** Unix milliseconds of the last part the host acknowledged. */
  savedAt: number;
}

export const RESUME_KEY = 'hnx.uploads.resume';

export function sameFile(a: FileIdentity, b: FileIdentity): boolean {
  return a.name === b.name && a.size === b.size && a.lastModified === b.lastModified;
}

export interface ResumeStore {
  list(userId: string): ResumeRecord[];
  find(userId: string, file: FileIdentity): ResumeRecord | undefined;
  save(record: ResumeRecord): void;
  forget(chunkId: string): void;
}

/** Storage may be missing or throw (private mode, quota): then nothing is remembered and nothing breaks. */
export function createResumeStore(storage: Pick<Storage, 'getItem' | 'setItem'> | null): ResumeStore {
  function readAll(): ResumeRecord[] {
    let raw: string | null = null;
    try {
      raw = storage?.getItem(RESUME_KEY) ?? null;
    } catch {
      return [];
    }
    if (raw === null) return [];
    try {
      const value: unknown = JSON.parse(raw);
      return Array.isArray(value) ? value.filter(isRecord) : [];
    } catch {
      return [];
    }
  }

  function writeAll(records: ResumeRecord[]): void {
    try {
      storage?.setItem(RESUME_KEY, JSON.stringify(records));
    } catch {
      // Full or blocked storage: the upload still runs, it just cannot resume after a reload.
    }
  }

  return {
    list: (userId) => readAll().filter((r) => r.userId === userId),
    find: (userId, file) => readAll().find((r) => r.userId === userId && sameFile(r, file)),
    save(record) {
      writeAll([
        ...readAll().filter(
          (r) => r.chunkId !== record.chunkId && !(r.userId === record.userId && sameFile(r, record)),
        ),
        record,
      ]);
    },
    forget(chunkId) {
      const all = readAll();
      const kept = all.filter((r) => r.chunkId !== chunkId);
      if (kept.length !== all.length) writeAll(kept);
    },
  };
}

function isRecord(value: unknown): value is ResumeRecord {
  if (typeof value !== 'object' || value === null) return false;
  const r = value as Record<string, unknown>;
  return (
    typeof r.userId === 'string' &&
    typeof r.chunkId === 'string' &&
    typeof r.name === 'string' &&
    typeof r.size === 'number' &&
    typeof r.lastModified === 'number' &&
    typeof r.chunkSize === 'number' &&
    typeof r.amountOfChunks === 'number' &&
    typeof r.kind === 'string' &&
    typeof r.title === 'string' &&
    typeof r.savedAt === 'number'
  );
}
