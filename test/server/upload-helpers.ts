import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { Answer, TestHost } from './helpers.js';
import type { Account } from './helpers.js';

export const md5 = (data: Uint8Array | string): string => createHash('md5').update(data).digest('hex');

/** Every file under the data folder's files/, tmp/ and chunks/, to show a refused upload left nothing. */
export async function blobTree(dir: string): Promise<string[]> {
  const out: string[] = [];
  async function walk(path: string): Promise<void> {
    let entries;
    try {
      entries = await readdir(path, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const full = join(path, entry.name);
      if (entry.isDirectory()) await walk(full);
      else out.push(relative(dir, full));
    }
  }
  for (const sub of ['files', 'tmp', 'chunks']) await walk(join(dir, sub));
  return out.sort();
}

export interface UploadFields {
  [field: string]: string | undefined;
}

/** A multipart upload shaped like HypernexSharp's: text fields first, then the file part. */
export async function upload(
  host: TestHost,
  account: Account | { id: string; token: string },
  file: { name: string; data: Uint8Array<ArrayBuffer> | string; field?: string } | null,
  fields: UploadFields = {},
  path = 'upload',
): Promise<Answer> {
  const form = new FormData();
  form.append('userid', account.id);
  form.append('tokenContent', account.token);
  for (const [key, value] of Object.entries(fields)) if (value !== undefined) form.append(key, value);
  if (file) {
    form.append(file.field ?? 'file', new Blob([file.data], { type: 'application/octet-stream' }), file.name);
  }
  const res = await host.raw(path, { method: 'POST', body: form });
  if (res.status !== 200) throw new Error(`status ${res.status}`);
  return (await res.json()) as Answer;
}

export function avatarMeta(overrides: Record<string, unknown> = {}): string {
  return JSON.stringify({
    Id: '',
    OwnerId: '',
    Publicity: 0,
    Name: 'Bot',
    Description: 'A test avatar',
    Tags: ['robot'],
    ImageURL: '',
    BuildPlatform: 0,
    ...overrides,
  });
}

export function worldMeta(overrides: Record<string, unknown> = {}): string {
  return JSON.stringify({
    Id: '',
    OwnerId: '',
    Publicity: 0,
    Name: 'Plaza',
    Description: 'A test world',
    Tags: [],
    ThumbnailURL: '',
    IconURLs: [],
    ServerScripts: [],
    BuildPlatform: 0,
    ...overrides,
  });
}
