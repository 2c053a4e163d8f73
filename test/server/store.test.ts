import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ForeignDataFolderError } from '../../server/store/data-folder.js';
import { CorruptDataFileError } from '../../server/store/durable-file.js';
import { currentHolder, processStartTime } from '../../server/store/lock.js';
import {
  DataFolderInUseError,
  Store,
  StorageWriteError,
  type StoreOptions,
} from '../../server/store/store.js';
import { frameLine } from '../../server/store/wal.js';
import { FaultyFs } from './faulty-fs.js';
import { tempDir } from './helpers.js';
import { describeStoreConformance, entryKeyOf, type Doc, type Entry } from './store-conformance.js';

const SPEC = {
  collections: ['things'],
  logs: [{ name: 'history', file: 'history.jsonl', keyOf: entryKeyOf }],
};

const opened: Store[] = [];
const dirs: string[] = [];

async function openStore(dir: string, options: StoreOptions = {}): Promise<Store> {
  const store = await Store.open(dir, SPEC, options);
  store.collection<Doc>('things').addIndex('name', (doc) => doc.name);
  store.collection<Doc>('things').addListIndex('tag', (doc) => doc.list ?? []);
  opened.push(store);
  return store;
}

async function newDir(): Promise<string> {
  const dir = await tempDir('hnx-store-');
  dirs.push(dir);
  return dir;
}

afterEach(async () => {
  for (const store of opened.splice(0)) await store.close().catch(() => undefined);
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describeStoreConformance('embedded (write-ahead log and record files)', {
  place: newDir,
  open: (dir) => openStore(dir),
});

const put = (store: Store, id: string, doc: Doc) => store.tx((t) => t.repo<Doc>('things').put(id, doc));

async function walText(dir: string): Promise<string> {
  const names = (await readdir(join(dir, 'wal'))).sort((a, b) => parseInt(a) - parseInt(b));
  let text = '';
  for (const name of names) text += await readFile(join(dir, 'wal', name), 'utf8');
  return text;
}

/** Every file under `dir` with its size and content, to show a refused start wrote nothing. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  async function walk(path: string, rel: string): Promise<void> {
    for (const name of await readdir(path)) {
      const full = join(path, name);
      const info = await stat(full);
      if (info.isDirectory()) await walk(full, `${rel}${name}/`);
      else out[`${rel}${name}`] = await readFile(full, 'utf8');
    }
  }
  await walk(dir, '');
  return out;
}

describe('embedded store: failed writes', () => {
  for (const fault of ['enospc', 'short', 'eio-write', 'eio-sync'] as const) {
    it(`refuses a commit whose log write fails (${fault}), shows it to nobody, and recovers by itself`, async () => {
      const dir = await newDir();
      const fs = new FaultyFs();
      const store = await openStore(dir, { fs });
      await put(store, 'a', { n: 1 });
      fs.fault = fault;
      const refused = put(store, 'a', { n: 2 });
      await expect(refused).rejects.toBeInstanceOf(StorageWriteError);
      await expect(refused).rejects.toThrow(
        fault === 'eio-sync' || fault === 'eio-write' ? /i\/o error/ : /disk is full/,
      );
      expect(await store.collection<Doc>('things').get('a')).toEqual({ n: 1 });
      // Nothing torn is left behind in the log, even before the next write.
      if (fault !== 'eio-write') expect((await walText(dir)).endsWith('\n')).toBe(true);
      // Every commit fails cleanly while the disk is bad...
      if (fault !== 'short')
        await expect(put(store, 'b', { n: 1 })).rejects.toBeInstanceOf(StorageWriteError);
      // ...and the next one after space returns succeeds, with no restart.
      fs.fault = null;
      await put(store, 'a', { n: 3 });
      expect(await store.collection<Doc>('things').get('a')).toEqual({ n: 3 });
      expect(await store.collection<Doc>('things').has('b')).toBe(false);
      await store.close();
      const again = await openStore(dir);
      expect(await again.collection<Doc>('things').get('a')).toEqual({ n: 3 });
      expect(await again.collection<Doc>('things').has('b')).toBe(false);
    });
  }

  it('never replays a refused commit after a crash: the log holds only acknowledged lines', async () => {
    const dir = await newDir();
    const fs = new FaultyFs();
    const store = await openStore(dir, { fs });
    await put(store, 'a', { n: 1 });
    fs.fault = 'short';
    await expect(put(store, 'a', { n: 2 })).rejects.toBeInstanceOf(StorageWriteError);
    // A crash now: copy the folder as it is on disk, and open the copy.
    const copy = await newDir();
    for (const [rel, text] of Object.entries(await snapshot(dir))) {
      if (rel === 'companion.lock') continue;
      await mkdir(join(copy, rel, '..'), { recursive: true });
      await writeFile(join(copy, rel), text);
    }
    const after = await openStore(copy);
    expect(await after.collection<Doc>('things').get('a')).toEqual({ n: 1 });
  });

  it('fails the commits queued behind a failed write (they may have read its versions)', async () => {
    const dir = await newDir();
    const fs = new FaultyFs();
    const store = await openStore(dir, { fs });
    await put(store, 'a', { n: 1 });
    let release!: () => void;
    fs.gate = new Promise((resolve) => (release = resolve));
    const first = put(store, 'a', { n: 2 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Queued behind the held write; it reads the version the first one wrote.
    const second = store.tx(async (t) => {
      const a = (await t.repo<Doc>('things').get('a'))!;
      t.repo<Doc>('things').put('b', { n: a.n * 10 });
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Not durable yet: readers still see the old value.
    expect(await store.collection<Doc>('things').get('a')).toEqual({ n: 1 });
    fs.fault = 'enospc';
    fs.gate = null;
    release();
    await expect(first).rejects.toBeInstanceOf(StorageWriteError);
    await expect(second).rejects.toBeInstanceOf(StorageWriteError);
    fs.fault = null;
    await put(store, 'c', { n: 3 });
    expect(await store.collection<Doc>('things').get('a')).toEqual({ n: 1 });
    expect(await store.collection<Doc>('things').has('b')).toBe(false);
  });

  it('shows a change to readers only once it is durable', async () => {
    const dir = await newDir();
    const fs = new FaultyFs();
    const store = await openStore(dir, { fs });
    await put(store, 'a', { n: 1 });
    let release!: () => void;
    fs.gate = new Promise((resolve) => (release = resolve));
    const writing = put(store, 'a', { n: 2 });
    let readDone = false;
    // A read-only transaction that sees the pending version answers only once it is durable.
    const reading = store
      .tx(async (t) => (await t.repo<Doc>('things').get('a'))?.n)
      .then((n) => {
        readDone = true;
        return n;
      });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(await store.collection<Doc>('things').get('a')).toEqual({ n: 1 });
    expect(readDone).toBe(false);
    fs.gate = null;
    release();
    await writing;
    expect(await reading).toBe(2);
    expect(await store.collection<Doc>('things').get('a')).toEqual({ n: 2 });
  });

  it('logs a background checkpoint failure with the file, and catches up once it can', async () => {
    const dir = await newDir();
    const logged: Array<{ object: Record<string, unknown>; message: string }> = [];
    const logger = {
      info: () => undefined,
      warn: () => undefined,
      error: (object: object, message: string) =>
        logged.push({ object: object as Record<string, unknown>, message }),
    };
    const store = await openStore(dir, { logger, checkpointAfterMs: 20 });
    // The record folder is replaced by a file: every record write in it fails.
    await rm(join(dir, 'things'), { recursive: true });
    await writeFile(join(dir, 'things'), 'not a folder');
    await put(store, 'a', { n: 1 });
    await expect.poll(() => logged.length, { timeout: 3000 }).toBeGreaterThan(0);
    expect(logged[0]!.message).toMatch(/checkpoint failed/);
    expect(String(logged[0]!.object.file)).toContain(join(dir, 'things'));
    // Acknowledged data is still readable and in the log.
    expect(await store.collection<Doc>('things').get('a')).toEqual({ n: 1 });
    await rm(join(dir, 'things'));
    await mkdir(join(dir, 'things'));
    await expect
      .poll(async () => (await readdir(join(dir, 'things'))).includes('a.json'), { timeout: 3000 })
      .toBe(true);
  });
});

describe('embedded store: files on disk', () => {
  it('keeps one small JSON file per record and frames each log line with its checksum', async () => {
    const dir = await newDir();
    const store = await openStore(dir);
    await put(store, 'a', { n: 1 });
    const lines = (await walText(dir)).split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^[0-9a-f]{8} \[/);
    expect(lines[0]).toBe(frameLine(lines[0]!.slice(9)));
    await store.checkpoint();
    expect(JSON.parse(await readFile(join(dir, 'things', 'a.json'), 'utf8'))).toEqual({
      seq: expect.any(Number),
      data: { n: 1 },
    });
  });

  it('survives two crashes in a row: a torn last line is dropped in any segment, not only the last', async () => {
    const dir = await newDir();
    const store = await openStore(dir);
    await put(store, 'a', { n: 1 });
    await store.close();
    await rm(join(dir, 'wal'), { recursive: true, force: true });
    await mkdir(join(dir, 'wal'));
    const line = (id: string, seq: number, n: number) =>
      frameLine(JSON.stringify([{ c: 'things', i: id, r: { seq, data: { n } } }]));
    // Crash one left segment 7 with a torn tail; the next start opened segment 8 and crashed too.
    await writeFile(join(dir, 'wal', '7.log'), `${line('a', 100, 2)}\n${line('b', 101, 1).slice(0, 30)}`);
    await writeFile(join(dir, 'wal', '8.log'), `${line('c', 102, 1)}\n${line('d', 103, 1).slice(0, 12)}`);
    const again = await openStore(dir);
    const things = again.collection<Doc>('things');
    expect(await things.get('a')).toEqual({ n: 2 });
    expect(await things.has('b')).toBe(false);
    expect(await things.get('c')).toEqual({ n: 1 });
    expect(await things.has('d')).toBe(false);
    // Numbering goes on after what the log held.
    const entry = await again.tx((t) => t.append<Entry>('history', { seq: 0, target: 'x', note: 'y' }));
    expect(entry.seq).toBeGreaterThan(102);
  });

  it('replays log lines of the first format (no checksum)', async () => {
    const dir = await newDir();
    await openStore(dir);
    await opened.pop()!.close();
    await writeFile(
      join(dir, 'wal', '3.log'),
      `${JSON.stringify([{ c: 'things', i: 'a', r: { seq: 5, data: { n: 9 } } }])}\n`,
    );
    const again = await openStore(dir);
    expect(await again.collection<Doc>('things').get('a')).toEqual({ n: 9 });
  });

  const refusals: Array<[string, (valid: string) => string, RegExp]> = [
    ['a line whose checksum fails', (valid) => valid.replace('"n":7', '"n":8'), /checksum mismatch/],
    ['a line that is not JSON', () => `${frameLine('[{"c":')}`, /line 1/],
    [
      'a record for an unknown collection',
      () => frameLine('[{"c":"nope","i":"a","r":{"seq":9,"data":{}}}]'),
      /no known collection/,
    ],
    [
      'a record id that escapes the folder',
      () => frameLine('[{"c":"things","i":"../x","r":{"seq":9,"data":{}}}]'),
      /no valid record id/,
    ],
    ['a record without a version', () => frameLine('[{"c":"things","i":"a","r":null}]'), /no record version/],
    ['a log entry for an unknown log', () => frameLine('[{"l":"nope","s":3,"e":{}}]'), /no known log/],
  ];
  for (const [what, make, reason] of refusals) {
    it(`stops at start on ${what} in the middle of the log, naming the file and writing nothing`, async () => {
      const dir = await newDir();
      const store = await openStore(dir);
      await put(store, 'keep', { n: 1 });
      await store.close();
      const valid = frameLine(JSON.stringify([{ c: 'things', i: 'a', r: { seq: 50, data: { n: 7 } } }]));
      const good = frameLine(JSON.stringify([{ c: 'things', i: 'b', r: { seq: 51, data: { n: 1 } } }]));
      await writeFile(join(dir, 'wal', '90.log'), `${make(valid)}\n${good}\n`);
      const before = await snapshot(dir);
      const failure = openStore(dir);
      await expect(failure).rejects.toBeInstanceOf(CorruptDataFileError);
      await expect(failure).rejects.toThrow(join(dir, 'wal', '90.log'));
      await expect(failure).rejects.toThrow(reason);
      expect(await snapshot(dir)).toEqual(before);
    });
  }

  it('stops on a corrupt record file, naming it, and leaves it untouched', async () => {
    const dir = await newDir();
    const store = await openStore(dir);
    await put(store, 'a', { n: 1 });
    await store.close();
    await writeFile(join(dir, 'things', 'a.json'), '{"seq": 1, "data": {"n"');
    const before = await snapshot(dir);
    await expect(openStore(dir)).rejects.toThrow(`${join(dir, 'things', 'a.json')} is corrupt`);
    expect(await snapshot(dir)).toEqual(before);
  });
});

describe('embedded store: whose folder', () => {
  it('refuses a folder that holds other files, touching nothing', async () => {
    const dir = await newDir();
    await writeFile(join(dir, 'notes.txt'), 'mine');
    await mkdir(join(dir, 'tmp'));
    await writeFile(join(dir, 'tmp', 'draft.txt'), 'mine too');
    const before = await snapshot(dir);
    const failure = openStore(dir);
    await expect(failure).rejects.toBeInstanceOf(ForeignDataFolderError);
    await expect(failure).rejects.toThrow(/already holds other files \(notes\.txt, tmp\)/);
    expect(await snapshot(dir)).toEqual(before);
  });

  it('refuses the root of the file system and a file', async () => {
    await expect(openStore('/')).rejects.toBeInstanceOf(ForeignDataFolderError);
    const dir = await newDir();
    await writeFile(join(dir, 'a-file'), 'x');
    await expect(openStore(join(dir, 'a-file'))).rejects.toThrow(/is a file/);
  });

  it('makes an empty or missing folder its own, and opens it again', async () => {
    const dir = await newDir();
    await openStore(join(dir, 'new', 'deeper'));
    await opened.pop()!.close();
    await openStore(join(dir, 'new', 'deeper'));
    const empty = await newDir();
    await openStore(empty);
    expect(await readdir(empty)).toContain('meta.json');
  });
});

describe('embedded store: the lock', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
  });

  async function lockedBy(dir: string, holder: Record<string, unknown>): Promise<void> {
    await openStore(dir);
    await opened.pop()!.close();
    await writeFile(join(dir, 'companion.lock'), JSON.stringify(holder));
  }

  async function liveChild(): Promise<ChildProcess> {
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    children.push(child);
    await new Promise((resolve) => child.once('spawn', resolve));
    return child;
  }

  it('lets one process hold a data folder at a time', async () => {
    const dir = await newDir();
    await openStore(dir);
    await expect(openStore(dir)).rejects.toBeInstanceOf(DataFolderInUseError);
  });

  it('refuses a folder held by a live process', async () => {
    const dir = await newDir();
    const child = await liveChild();
    const self = currentHolder();
    await lockedBy(dir, { ...self, pid: child.pid, started: processStartTime(child.pid!) });
    await expect(openStore(dir)).rejects.toThrow(`in use by process ${child.pid}`);
  });

  it('takes over a lock whose process id now belongs to another process', async () => {
    const dir = await newDir();
    const child = await liveChild();
    const self = currentHolder();
    if (processStartTime(child.pid!) === null) throw new Error('this test needs /proc (Linux)');
    await lockedBy(dir, { ...self, pid: child.pid, started: '1' });
    await openStore(dir);
  });

  it('takes over a lock taken before the machine restarted, and one whose process died', async () => {
    const dir = await newDir();
    const child = await liveChild();
    await lockedBy(dir, { pid: child.pid, hostname: hostname(), boot: 'an-earlier-boot', started: null });
    await openStore(dir);
    await opened.pop()!.close();
    const dead = spawn(process.execPath, ['-e', '0']);
    await new Promise((resolve) => dead.once('exit', resolve));
    await lockedBy(dir, { ...currentHolder(), pid: dead.pid, started: null });
    await openStore(dir);
  });
});
