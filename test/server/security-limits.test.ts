import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdir, rm, stat, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { assertBuilt, BIN } from './cli-helpers.js';
import {
  expectFail,
  expectOk,
  manualClock,
  PASSWORD,
  signUp,
  startHost,
  tempDir,
  type Account,
  type Answer,
  type TestHost,
} from './helpers.js';
import { blobTree, md5, upload } from './upload-helpers.js';

const KIB = 1024;
const MIB = 1024 * KIB;
const BOUNDARY = 'SecLimitsBoundary';

/** Multipart text for a text field, and for the start of a file part. */
const field = (name: string, value: string): string =>
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
const fileHead = (filename: string): string =>
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`;
const END = `--${BOUNDARY}--\r\n`;

/** Bytes currently in the data folder's tmp/ (uploads being received). */
async function tmpBytes(dir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(join(dir, 'tmp')).catch(() => [] as string[])) {
    total += await stat(join(dir, 'tmp', name)).then(
      (s) => s.size,
      () => 0,
    );
  }
  return total;
}

async function until(what: string, check: () => Promise<boolean> | boolean, limitMs = 10_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

interface RawUpload {
  /** The host's answer, or how the connection ended without one. */
  outcome: Promise<Answer | { error: string }>;
  /** Resolves once the bytes given were handed to the kernel, or the request already ended. */
  sent: Promise<void>;
  abort(): void;
}

/**
 * A multipart upload written by hand: `parts` are sent, then the request stalls (it declares more bytes than
 * it sends) unless `end` is set.
 */
function rawUpload(
  url: string,
  parts: Array<string | Buffer>,
  options: { localAddress?: string; end?: boolean; path?: string } = {},
): RawUpload {
  const body = Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));
  const req = request(`${url}/api/v1/${options.path ?? 'upload'}`, {
    method: 'POST',
    localAddress: options.localAddress,
    agent: false,
    headers: {
      'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
      'content-length': String(options.end ? body.length : body.length + 200 * MIB),
    },
  });
  let markSent!: () => void;
  const sent = new Promise<void>((resolve) => (markSent = resolve));
  const outcome = new Promise<Answer | { error: string }>((resolve) => {
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve(JSON.parse(text) as Answer));
      res.on('error', (e) => resolve({ error: e.message }));
    });
    req.on('error', (e) => resolve({ error: (e as NodeJS.ErrnoException).code ?? e.message }));
  }).finally(markSent);
  req.write(body, () => markSent());
  if (options.end) req.end();
  return { outcome, sent, abort: () => req.destroy() };
}

describe('security limits', () => {
  let host: TestHost | undefined;
  afterEach(async () => {
    await host?.close();
    host = undefined;
  });

  describe('anonymous disk fill', () => {
    it('keeps at most unverifiedFileBytes of a file sent before the credentials and refuses it before the body ends', async () => {
      host = await startHost({ uploads: { unverifiedFileBytes: 64 * KIB } });
      const alice = await signUp(host, 'alice');
      const h = host;

      // The file first (4 MiB sent of a declared 200 MiB), the credentials would only come after it.
      const attack = rawUpload(h.server.url, [fileHead('big.hna'), Buffer.alloc(4 * MIB, 7)]);
      let stored = 0;
      const outcome = await Promise.race([
        attack.outcome,
        until('tmp/ to grow', async () => (stored = await tmpBytes(h.dir)) > 64 * KIB, 30_000).then(() => ({
          error: `the host stored ${stored} bytes of an anonymous file`,
        })),
      ]);
      attack.abort();
      // The host answers and hangs up while the client is still sending: TCP may then reset the connection before
      // the client reads the answer (a reset discards it). Either way the host refused before the body ended.
      if ((outcome as { error?: string }).error === 'ECONNRESET') {
        expect(await tmpBytes(h.dir)).toBeLessThanOrEqual(64 * KIB);
      } else {
        expect(outcome).toMatchObject({
          success: false,
          result: { error: { code: 'INVALID_PARAMETERS', fields: { userid: expect.any(String) } } },
        });
        expect((outcome as Answer).message).toMatch(/before the file/);
      }
      await until('tmp/ to be empty', async () => (await blobTree(h.dir)).length === 0);

      // Other orders still work: a small file before the credentials, a large one after them (as real clients).
      const small = randomBytes(16 * KIB);
      const late = rawUpload(
        h.server.url,
        [
          fileHead('small.png'),
          small,
          '\r\n',
          field('userid', alice.id),
          field('tokenContent', alice.token),
          END,
        ],
        { end: true },
      );
      const lateAnswer = (await late.outcome) as Answer;
      expect(expectOk(lateAnswer, 'Uploaded File!').UploadData).toMatchObject({
        Size: small.length,
        Hash: md5(small),
      });
      const big = randomBytes(2 * MIB);
      const first = expectOk(await upload(h, alice, { name: 'big.hna', data: big }), 'Uploaded File!');
      expect(first.UploadData).toMatchObject({ Size: big.length, Hash: md5(big) });
    });
  });

  describe('descriptor exhaustion', () => {
    let served: ChildProcess | undefined;
    let dir: string | undefined;
    afterEach(async () => {
      if (served && served.exitCode === null && served.signalCode === null) {
        const proc = served;
        await new Promise((r) => {
          proc.once('exit', r);
          proc.kill('SIGKILL');
        });
      }
      served = undefined;
      if (dir) await rm(dir, { recursive: true, force: true });
      dir = undefined;
    });

    it('holds few stalled anonymous uploads under a 256-descriptor limit, drops them after the idle timeout, and a signed-in user still uploads and reads', async () => {
      assertBuilt();
      dir = await tempDir('hnx-sec-fd-');
      const limits = { unverifiedPerAddress: 4, unverifiedTotal: 16, idleTimeoutSeconds: 2 };
      const configFile = join(dir, 'config.json');
      await writeFile(configFile, JSON.stringify({ uploads: limits }));
      const dataDir = join(dir, 'data');
      // The host as the CLI runs it, in its own process with few descriptors, as a busy desktop would have.
      const proc = spawn(
        'prlimit',
        [
          '--nofile=256:256',
          process.execPath,
          BIN,
          'serve',
          '--host',
          '127.0.0.1',
          '--port',
          '0',
          '--no-ui',
          '--data-dir',
          dataDir,
          '--config',
          configFile,
        ],
        { env: { ...process.env, HYPERNEX_LOG_LEVEL: 'error' }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      served = proc;
      let out = '';
      let err = '';
      proc.stderr!.on('data', (c: Buffer) => (err += c.toString()));
      const url = await new Promise<string>((resolve, reject) => {
        proc.stdout!.on('data', (c: Buffer) => {
          out += c.toString();
          const match = /listening on (http:\/\/\S+)/.exec(out);
          if (match) resolve(match[1]!);
        });
        proc.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${err}`)));
      });
      const fds = async (): Promise<number> => (await readdir(`/proc/${proc.pid}/fd`)).length;
      const post = async (path: string, body: unknown): Promise<Answer> =>
        (await (
          await fetch(`${url}/api/v1/${path}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body),
          })
        ).json()) as Answer;
      const created = expectOk(
        await post('createUser', { username: 'carol', password: PASSWORD, email: 'carol@example.com' }),
      ).UserData as { Id: string; AccountTokens: Array<{ content: string }> };
      const carol: Account = { id: created.Id, username: 'carol', token: created.AccountTokens[0]!.content };
      const baseline = await fds();

      // 320 anonymous uploads from 40 addresses, each stalling in its file part with no credentials sent.
      const attempts: RawUpload[] = [];
      for (let a = 0; a < 40; a++) {
        const batch = Array.from({ length: 8 }, () =>
          rawUpload(url, [fileHead('stall.hna'), Buffer.alloc(16 * KIB, 1)], {
            localAddress: `127.0.0.${a + 2}`,
          }),
        );
        attempts.push(...batch);
        await Promise.all(batch.map((b) => b.sent));
      }
      // All but unverifiedTotal of them are refused at once (RATE_LIMITED): the host holds at most that many
      // (a socket and a temp file each), not one per attempt.
      let answered = 0;
      for (const attempt of attempts) void attempt.outcome.then(() => answered++);
      await until(
        'all but unverifiedTotal stalled uploads to be answered',
        () => answered >= attempts.length - limits.unverifiedTotal,
      );
      expect(await fds()).toBeLessThanOrEqual(baseline + 2 * limits.unverifiedTotal + 8);

      // A signed-in user uploads and reads their file back meanwhile.
      const bytes = randomBytes(1 * MIB);
      const form = new FormData();
      form.append('userid', carol.id);
      form.append('tokenContent', carol.token);
      form.append('file', new Blob([bytes]), 'mine.png');
      const answer = (await (
        await fetch(`${url}/api/v1/upload`, { method: 'POST', body: form })
      ).json()) as Answer;
      const data = expectOk(answer, 'Uploaded File!').UploadData as { FileId: string; Hash: string };
      expect(data.Hash).toBe(md5(bytes));
      const download = await fetch(`${url}/api/v1/file/${carol.id}/${data.FileId}`);
      expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);

      // Every stalled upload gets its answer: refused or evicted (RATE_LIMITED), or dropped when idle (TIMED_OUT).
      const outcomes = await Promise.all(attempts.map((a) => a.outcome));
      const codes = outcomes.map((o) => ('error' in o ? o.error : o.result?.error?.code));
      expect(new Set(codes)).toEqual(new Set(['RATE_LIMITED', 'TIMED_OUT']));
      // ... and leaves no partial file behind.
      await until(
        'tmp/ to be empty',
        async () => (await tmpBytes(dataDir)) === 0 && (await readdir(join(dataDir, 'tmp'))).length === 0,
      );
      await until('the dropped connections to close', async () => (await fds()) <= baseline + 4);
    });
  });

  describe('idle bodies', () => {
    it('drops a stalled body on every route that takes files, signed in or not, and removes its partial file', async () => {
      host = await startHost({ uploads: { idleTimeoutSeconds: 1 } });
      const alice = await signUp(host, 'alice');
      const url = host.server.url;
      const stalled = [
        // Signed in, stalled in the middle of the file.
        rawUpload(url, [
          field('userid', alice.id),
          field('tokenContent', alice.token),
          fileHead('half.hna'),
          Buffer.alloc(256 * KIB, 3),
        ]),
        rawUpload(url, [field('chunkId', ''), fileHead('part.hna'), Buffer.alloc(8 * KIB, 4)], {
          path: 'uploadPart',
        }),
        rawUpload(url, [field('userid', alice.id), field('name', 'Game')], { path: 'builds/publish' }),
      ];
      // A JSON upload that never finishes its body.
      const json = new Promise<Answer | { error: string }>((resolve) => {
        const req = request(`${url}/api/v1/upload`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-length': String(1024 * KIB) },
        });
        req.on('response', (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve(JSON.parse(text) as Answer));
        });
        req.on('error', (e) => resolve({ error: e.message }));
        req.write(`{"userid":"${alice.id}","tokenContent":"${alice.token}","file":{"name":"a.png","data":"`);
      });
      for (const outcome of [...stalled.map((s) => s.outcome), json]) {
        expect(await outcome).toMatchObject({ success: false, result: { error: { code: 'TIMED_OUT' } } });
      }
      const h = host;
      await until('the partial files to be removed', async () => (await blobTree(h.dir)).length === 0);
      // The host keeps serving, and a whole upload goes through.
      expectOk(await upload(h, alice, { name: 'ok.png', data: 'fine' }), 'Uploaded File!');
    });
  });

  describe('unfinished chunk sets', () => {
    it('limits the chunk sets and bytes one user holds, refusing clearly, and frees room as sets finish or expire', async () => {
      const clock = manualClock();
      host = await startHost(
        {
          uploads: {
            maxFileBytes: 32 * KIB,
            chunkSetsPerUser: 2,
            chunkBytesPerUser: 48 * KIB,
            chunkSetTtlSeconds: 3600,
          },
        },
        { clock },
      );
      const h = host;
      const alice = await signUp(h, 'alice');
      const bob = await signUp(h, 'bob');
      const part = (who: Account, chunkId: string, n: number, data: string | Buffer, name = 'big.hna') =>
        upload(
          h,
          who,
          { name: 'blob', data: typeof data === 'string' ? data : new Uint8Array(data) },
          { chunkId, chunkNumber: String(n), amountOfChunks: '3', originalFileName: name },
          'uploadPart',
        );

      const a = expectOk(await part(alice, '', 0, 'AAA')).chunkId as string;
      const b = expectOk(await part(alice, '', 0, 'AAA')).chunkId as string;
      const held = await blobTree(h.dir);
      const third = expectFail(await part(alice, '', 0, 'AAA'), 'CHUNK_QUOTA_EXCEEDED');
      expect(third.message).toMatch(/2 unfinished chunked uploads/);
      expect(await blobTree(h.dir)).toEqual(held);
      // Someone else is not affected.
      expectOk(await part(bob, '', 0, 'BBB'));

      // Bytes: 3 + 3 + 30 KiB held; 20 KiB more would pass 48 KiB. The set stays as it was.
      expectOk(await part(alice, a, 1, Buffer.alloc(30 * KIB, 1)));
      const over = expectFail(await part(alice, b, 1, Buffer.alloc(20 * KIB, 2)), 'CHUNK_QUOTA_EXCEEDED');
      expect(over.message).toMatch(/hold 30726 bytes/);
      expect(
        expectOk(
          await h.post('uploadPartStatus', { userid: alice.id, tokenContent: alice.token, chunkId: b }),
        ),
      ).toMatchObject({ received: [0], receivedBytes: 3 });

      // Finishing a set frees its room.
      expectOk(await part(alice, a, 2, 'CCC'), 'Uploaded File!');
      expectOk(await part(alice, b, 1, Buffer.alloc(20 * KIB, 2)));
      const c = expectOk(await part(alice, '', 0, 'DDD')).chunkId as string;
      expectFail(await part(alice, '', 0, 'EEE'), 'CHUNK_QUOTA_EXCEEDED');

      // Stale sets still expire, and no longer count.
      clock.advance(3601);
      expectOk(await part(alice, '', 0, 'FFF'));
      expect(await h.server.uploads.sweepChunkSets()).toBe(3);
      expectFail(await part(alice, c, 1, 'GGG'), 'UNKNOWN_CHUNK_SET');
    });
  });
});
