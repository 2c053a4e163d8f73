import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  expectFail,
  expectOk,
  manualClock,
  signUp,
  startHost,
  type Account,
  type Answer,
  type TestHost,
  editUser,
} from './helpers.js';
import { avatarMeta, blobTree, md5, upload, worldMeta } from './upload-helpers.js';

const AVATAR_BYTES = 'HNA-avatar-bytes-'.repeat(100);

describe('uploads', () => {
  let host: TestHost;
  let alice: Account;
  let bob: Account;
  const clock = manualClock();
  const fileUrl = (userId: string, fileId: string) => `${host.server.url}/api/v1/file/${userId}/${fileId}`;

  beforeEach(async () => {
    host = await startHost({ uploads: { maxFileBytes: 64 * 1024, chunkSetTtlSeconds: 3600 } }, { clock });
    alice = await signUp(host, 'alice');
    bob = await signUp(host, 'bob');
  });
  afterEach(async () => {
    await host.close();
  });

  async function nothingLeft(): Promise<void> {
    expect(await blobTree(host.dir)).toEqual([]);
    expect(
      expectOk(await host.post('getMyContent', { userid: alice.id, tokenContent: alice.token })),
    ).toEqual({
      Uploads: [],
      Avatars: [],
      Worlds: [],
    });
    expect((await host.server.users.get(alice.id))!.Avatars).toEqual([]);
  }

  describe('plain files', () => {
    it('stores a media file, answering UploadData with MD5, FileType and the key', async () => {
      const data = 'PNG-bytes-'.repeat(50);
      const result = expectOk(await upload(host, alice, { name: 'Picture.PNG', data }), 'Uploaded File!');
      const up = result.UploadData as Record<string, unknown>;
      expect(up).toEqual({
        UserId: alice.id,
        FileId: expect.stringMatching(/^file_[0-9a-f-]{36}$/),
        FileName: `${up.FileId as string}.png`,
        UploadType: 0,
        FileType: 0,
        Key: `${alice.id}/${up.FileId as string}.png`,
        Hash: md5(data),
        Size: data.length,
      });
      expect(result).not.toHaveProperty('AvatarId');
      expect(await readFile(join(host.dir, 'files', alice.id, up.FileName as string), 'utf8')).toBe(data);
      expect(await blobTree(host.dir)).toEqual([`files/${alice.id}/${up.FileName as string}`]);

      const meta = expectOk(await host.get(`filemeta/${alice.id}/${up.FileId as string}`), 'Got FileMeta!');
      expect(meta.FileMeta).toEqual(up);

      const res = await fetch(fileUrl(alice.id, up.FileId as string));
      expect(res.status).toBe(200);
      expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${up.FileName as string}"`);
      expect(res.headers.get('content-type')).toBe('image/png');
      expect(await res.text()).toBe(data);
    });

    it('serves byte ranges, and refuses one past the end', async () => {
      const data = '0123456789'.repeat(10);
      const up = expectOk(await upload(host, alice, { name: 'a.png', data })).UploadData as {
        FileId: string;
      };
      const part = await fetch(fileUrl(alice.id, up.FileId), { headers: { range: 'bytes=10-19' } });
      expect(part.status).toBe(206);
      expect(part.headers.get('content-range')).toBe('bytes 10-19/100');
      expect(await part.text()).toBe('0123456789');
      const tail = await fetch(fileUrl(alice.id, up.FileId), { headers: { range: 'bytes=-5' } });
      expect(await tail.text()).toBe('56789');
      const bad = await fetch(fileUrl(alice.id, up.FileId), { headers: { range: 'bytes=500-' } });
      expect(bad.status).toBe(416);
      expect(bad.headers.get('content-range')).toBe('bytes */100');
    });

    it('accepts a JSON upload with a base64 file and an object meta', async () => {
      const result = expectOk(
        await host.post('upload', {
          userid: alice.id,
          tokenContent: alice.token,
          file: { name: 'bot.hna', data: Buffer.from(AVATAR_BYTES).toString('base64') },
          avatarMeta: JSON.parse(avatarMeta()),
        }),
        'Uploaded Avatar!',
      );
      expect((result.UploadData as { Hash: string }).Hash).toBe(md5(AVATAR_BYTES));
      expect(result.AvatarId).toMatch(/^avatar_/);
    });

    it('caps JSON uploads separately', async () => {
      const small = await startHost({ uploads: { jsonUploadBytes: 1000 } });
      try {
        const acc = await signUp(small, 'carol');
        expectFail(
          await small.post('upload', {
            userid: acc.id,
            tokenContent: acc.token,
            file: { name: 'a.png', data: Buffer.alloc(2000).toString('base64') },
          }),
          'FILE_TOO_LARGE',
        );
        expect(await blobTree(small.dir)).toEqual([]);
      } finally {
        await small.close();
      }
    });
  });

  describe('avatars', () => {
    it('creates an avatar, adds a build per platform and overwrites the build of an existing platform', async () => {
      const first = expectOk(
        await upload(host, alice, { name: 'bot.hna', data: 'windows-1' }, { avatarMeta: avatarMeta() }),
        'Uploaded Avatar!',
      );
      const avatarId = first.AvatarId as string;
      const win1 = (first.UploadData as { FileId: string; UploadType: number }).FileId;
      expect((first.UploadData as { UploadType: number }).UploadType).toBe(1);
      expect((await host.server.users.get(alice.id))!.Avatars).toEqual([avatarId]);

      const android = expectOk(
        await upload(
          host,
          alice,
          { name: 'bot.hna', data: 'android-1' },
          { avatarMeta: avatarMeta({ Id: avatarId, BuildPlatform: 1, Name: 'Bot 2' }) },
        ),
        'Uploaded Avatar!',
      );
      expect(android.AvatarId).toBe(avatarId);
      const and1 = (android.UploadData as { FileId: string }).FileId;
      let meta = expectOk(await host.get(`meta/avatar/${avatarId}`), 'Got avatar meta').Meta as Record<
        string,
        unknown
      >;
      expect(meta).toMatchObject({
        Id: avatarId,
        OwnerId: alice.id,
        Name: 'Bot 2',
        Builds: [
          { FileId: win1, BuildPlatform: 0 },
          { FileId: and1, BuildPlatform: 1 },
        ],
      });

      const again = expectOk(
        await upload(
          host,
          alice,
          { name: 'bot.hna', data: 'windows-2' },
          { avatarMeta: avatarMeta({ Id: avatarId, Publicity: 1, Tags: ['new'] }) },
        ),
      );
      const win2 = (again.UploadData as { FileId: string }).FileId;
      // OwnerOnly now: the owner reads the whole meta (others get it without builds).
      const asOwner = await host.raw(`meta/avatar/${avatarId}`, {
        headers: { 'x-hypernex-userid': alice.id, 'x-hypernex-token': alice.token },
      });
      meta = expectOk((await asOwner.json()) as Answer).Meta as Record<string, unknown>;
      expect(meta).toMatchObject({ Publicity: 1, Tags: ['new'], Name: 'Bot' });
      expect(meta.Builds).toEqual([
        { FileId: and1, BuildPlatform: 1 },
        { FileId: win2, BuildPlatform: 0 },
      ]);
      // The replaced Windows build is gone: file and record.
      expectFail(await host.get(`filemeta/${alice.id}/${win1}`), 'FILE_NOT_FOUND');
      expect(await blobTree(host.dir)).toEqual(
        [`files/${alice.id}/${and1}.hna`, `files/${alice.id}/${win2}.hna`].sort(),
      );
      expect((await host.server.users.get(alice.id))!.Avatars).toEqual([avatarId]);
    });

    it('serves a public build to anyone and an OwnerOnly build only to its owner', async () => {
      const pub = expectOk(
        await upload(host, alice, { name: 'a.hna', data: 'public' }, { avatarMeta: avatarMeta() }),
      );
      const pubFile = (pub.UploadData as { FileId: string }).FileId;
      expect(await (await fetch(fileUrl(alice.id, pubFile))).text()).toBe('public');
      const priv = expectOk(
        await upload(
          host,
          alice,
          { name: 'b.hna', data: 'private' },
          { avatarMeta: avatarMeta({ Publicity: 1 }) },
        ),
      );
      const privFile = (priv.UploadData as { FileId: string }).FileId;
      const anon = await fetch(fileUrl(alice.id, privFile));
      expect(await anon.json()).toMatchObject({
        success: false,
        message: 'Failed to Authenticate FileToken',
      });
      const asBob = await fetch(fileUrl(alice.id, privFile), {
        headers: { 'x-hypernex-userid': bob.id, 'x-hypernex-token': bob.token },
      });
      expect(((await asBob.json()) as { success: boolean }).success).toBe(false);
      const asAlice = await fetch(fileUrl(alice.id, privFile), {
        headers: { 'x-hypernex-userid': alice.id, 'x-hypernex-token': alice.token },
      });
      expect(await asAlice.text()).toBe('private');
      expect(asAlice.headers.get('cache-control')).toMatch(/^private/);
    });

    it('never shows asset tokens in meta', async () => {
      const avatarId = expectOk(
        await upload(host, alice, { name: 'a.hna', data: 'x' }, { avatarMeta: avatarMeta() }),
      ).AvatarId as string;
      await host.server.uploads.saveAssetTokens('avatar', avatarId, () => [
        { content: 'secret-asset-token', dateCreated: 0, dateExpire: 0, app: 'x' },
      ]);
      const answer = await host.get(`meta/avatar/${avatarId}`);
      expect(JSON.stringify(answer)).not.toContain('secret-asset-token');
      expectFail(
        await host.get('meta/avatar/avatar_nope'),
        'CONTENT_NOT_FOUND',
        'Failed to get avatar meta!',
      );
    });

    it('lets the owner or a moderator remove an avatar, and nobody else', async () => {
      const avatarId = expectOk(
        await upload(host, alice, { name: 'a.hna', data: 'x' }, { avatarMeta: avatarMeta() }),
      ).AvatarId as string;
      expectFail(
        await host.post('remove/avatar', { userid: bob.id, tokenContent: bob.token, avatarid: avatarId }),
        'NOT_OWNER',
      );
      expect(await host.server.uploads.avatar(avatarId)).toBeDefined();
      expectOk(
        await host.post('remove/avatar', { userid: alice.id, tokenContent: alice.token, avatarid: avatarId }),
        'Removed avatar!',
      );
      await nothingLeft();

      const second = expectOk(
        await upload(host, alice, { name: 'a.hna', data: 'y' }, { avatarMeta: avatarMeta() }),
      ).AvatarId as string;
      await editUser(host, bob.id, (draft) => {
        draft.Rank = 4;
      });
      expectOk(
        await host.post('remove/avatar', { userid: bob.id, tokenContent: bob.token, avatarid: second }),
        'Removed avatar!',
      );
      await nothingLeft();
    });

    it('is deleted by the moderation deleteavatar action, files and owner list included', async () => {
      const avatarId = expectOk(
        await upload(host, alice, { name: 'a.hna', data: 'x' }, { avatarMeta: avatarMeta() }),
      ).AvatarId as string;
      await editUser(host, bob.id, (draft) => {
        draft.Rank = 4;
      });
      expectFail(
        await host.post('moderation', {
          userid: bob.id,
          tokenContent: bob.token,
          action: 'deleteavatar',
          targetUserId: alice.id,
          avatarId: 'avatar_nope',
        }),
        'CONTENT_NOT_FOUND',
      );
      const done = expectOk(
        await host.post('moderation', {
          userid: bob.id,
          tokenContent: bob.token,
          action: 'deleteavatar',
          targetUserId: alice.id,
          avatarId,
        }),
        'Removed avatar!',
      );
      expect(done.LogEntry).toMatchObject({ action: 'deleteavatar', fields: { avatarId } });
      await nothingLeft();
    });
  });

  describe('worlds', () => {
    it('creates a world with icons and local server scripts, and a re-upload drops scripts no build uses', async () => {
      const icon = expectOk(await upload(host, alice, { name: 'icon.png', data: 'icon' })).UploadData as {
        FileId: string;
      };
      const s1 = expectOk(await upload(host, alice, { name: 'a.js', data: 'one()' })).UploadData as {
        FileId: string;
        UploadType: number;
      };
      const s2 = expectOk(await upload(host, alice, { name: 'b.lua', data: 'two()' })).UploadData as {
        FileId: string;
      };
      expect(s1.UploadType).toBe(3);
      const created = expectOk(
        await upload(
          host,
          alice,
          { name: 'plaza.hnw', data: 'world-1' },
          {
            worldMeta: worldMeta({
              IconURLs: [fileUrl(alice.id, icon.FileId)],
              ServerScripts: [fileUrl(alice.id, s1.FileId), fileUrl(alice.id, s2.FileId)],
              ThumbnailURL: 'https://i.imgur.com/t.png',
            }),
          },
        ),
        'Uploaded World!',
      );
      const worldId = created.WorldId as string;
      const w1 = created.UploadData as { FileId: string; UploadType: number };
      expect(w1.UploadType).toBe(2);
      expect((await host.server.users.get(alice.id))!.Worlds).toEqual([worldId]);
      let meta = expectOk(await host.get(`meta/world/${worldId}`), 'Got world meta').Meta as Record<
        string,
        unknown
      >;
      expect(meta).toMatchObject({
        IconURLs: [fileUrl(alice.id, icon.FileId)],
        Builds: [
          {
            FileId: w1.FileId,
            BuildPlatform: 0,
            ServerScripts: [fileUrl(alice.id, s1.FileId), fileUrl(alice.id, s2.FileId)],
          },
        ],
      });
      // Scripts are not for everyone.
      expect(
        ((await (await fetch(fileUrl(alice.id, s1.FileId))).json()) as { message: string }).message,
      ).toBe('Incorrect Endpoint for Getting File');
      expectFail(
        await host.post('remove/file', { userid: alice.id, tokenContent: alice.token, fileid: s1.FileId }),
        'FILE_IN_USE',
      );

      const again = expectOk(
        await upload(
          host,
          alice,
          { name: 'plaza.hnw', data: 'world-2' },
          { worldMeta: worldMeta({ Id: worldId, ServerScripts: [fileUrl(alice.id, s2.FileId)] }) },
        ),
      );
      const w2 = (again.UploadData as { FileId: string }).FileId;
      meta = expectOk(await host.get(`meta/world/${worldId}`)).Meta as Record<string, unknown>;
      expect(meta.Builds).toEqual([
        { FileId: w2, BuildPlatform: 0, ServerScripts: [fileUrl(alice.id, s2.FileId)] },
      ]);
      expect(meta.IconURLs).toEqual([]);
      const tree = await blobTree(host.dir);
      expect(tree).toContain(`files/${alice.id}/${s2.FileId}.lua`);
      expect(tree).not.toContain(`files/${alice.id}/${s1.FileId}.js`);
      expect(tree).not.toContain(`files/${alice.id}/${w1.FileId}.hnw`);

      expectOk(
        await host.post('remove/world', { userid: alice.id, tokenContent: alice.token, worldid: worldId }),
        'Removed world!',
      );
      expect(await blobTree(host.dir)).toEqual([`files/${alice.id}/${icon.FileId}.png`]);
      expectOk(
        await host.post('remove/file', { userid: alice.id, tokenContent: alice.token, fileid: icon.FileId }),
        'Deleted file!',
      );
      await nothingLeft();
    });
  });

  describe('refusals leave no file and no record', () => {
    const cases: Array<[string, (h: TestHost) => Promise<[Parameters<typeof expectFail>[0], string]>]> = [
      [
        'a wrong token',
        async (h) => [
          await upload(h, { id: alice.id, token: 'nope' }, { name: 'a.png', data: 'x' }),
          'INVALID_TOKEN',
        ],
      ],
      [
        'a missing token',
        async (h) => {
          const form = new FormData();
          form.append('userid', alice.id);
          form.append('file', new Blob(['x']), 'a.png');
          return [
            (await (await h.raw('upload', { method: 'POST', body: form })).json()) as never,
            'INVALID_PARAMETERS',
          ];
        },
      ],
      ['no file part', async (h) => [await upload(h, alice, null), 'NO_FILE']],
      [
        'a file part with another name',
        async (h) => [
          await upload(h, alice, { name: 'a.png', data: 'x', field: 'upload' }),
          'UNEXPECTED_FILE_FIELD',
        ],
      ],
      [
        'a disallowed extension',
        async (h) => [await upload(h, alice, { name: 'virus.exe', data: 'MZ' }), 'FILE_TYPE_NOT_ALLOWED'],
      ],
      [
        'a file with no extension',
        async (h) => [await upload(h, alice, { name: 'hna', data: 'x' }), 'FILE_TYPE_NOT_ALLOWED'],
      ],
      [
        'a file over the limit',
        async (h) => [
          await upload(h, alice, { name: 'big.png', data: new Uint8Array(64 * 1024 + 1) }),
          'FILE_TOO_LARGE',
        ],
      ],
      [
        'meta that is not JSON',
        async (h) => [
          await upload(h, alice, { name: 'a.hna', data: 'x' }, { avatarMeta: '{"Name":' }),
          'INVALID_META',
        ],
      ],
      [
        'a Name over 50 characters',
        async (h) => [
          await upload(
            h,
            alice,
            { name: 'a.hna', data: 'x' },
            { avatarMeta: avatarMeta({ Name: 'n'.repeat(51) }) },
          ),
          'INVALID_META',
        ],
      ],
      [
        'a Description over 1000 characters',
        async (h) => [
          await upload(
            h,
            alice,
            { name: 'a.hna', data: 'x' },
            { avatarMeta: avatarMeta({ Description: 'd'.repeat(1001) }) },
          ),
          'INVALID_META',
        ],
      ],
      [
        'Publicity out of range',
        async (h) => [
          await upload(h, alice, { name: 'a.hna', data: 'x' }, { avatarMeta: avatarMeta({ Publicity: 2 }) }),
          'INVALID_META',
        ],
      ],
      [
        'BuildPlatform out of range',
        async (h) => [
          await upload(
            h,
            alice,
            { name: 'a.hna', data: 'x' },
            { avatarMeta: avatarMeta({ BuildPlatform: 2 }) },
          ),
          'INVALID_META',
        ],
      ],
      [
        'a null Name',
        async (h) => [
          await upload(h, alice, { name: 'a.hna', data: 'x' }, { avatarMeta: avatarMeta({ Name: null }) }),
          'INVALID_META',
        ],
      ],
      [
        'an image URL on a foreign domain',
        async (h) => [
          await upload(
            h,
            alice,
            { name: 'a.hna', data: 'x' },
            { avatarMeta: avatarMeta({ ImageURL: 'https://evil.example/x.png' }) },
          ),
          'INVALID_META',
        ],
      ],
      [
        '11 icons',
        async (h) => [
          await upload(
            h,
            alice,
            { name: 'w.hnw', data: 'x' },
            { worldMeta: worldMeta({ IconURLs: Array(11).fill('https://i.imgur.com/a.png') }) },
          ),
          'INVALID_META',
        ],
      ],
      [
        'a server script on another host',
        async (h) => [
          await upload(
            h,
            alice,
            { name: 'w.hnw', data: 'x' },
            { worldMeta: worldMeta({ ServerScripts: ['https://i.imgur.com/a.js'] }) },
          ),
          'INVALID_META',
        ],
      ],
      [
        'a world meta on a .hna file',
        async (h) => [
          await upload(h, alice, { name: 'a.hna', data: 'x' }, { worldMeta: worldMeta() }),
          'META_TYPE_MISMATCH',
        ],
      ],
      [
        'an avatar meta on a .png file',
        async (h) => [
          await upload(h, alice, { name: 'a.png', data: 'x' }, { avatarMeta: avatarMeta() }),
          'META_TYPE_MISMATCH',
        ],
      ],
    ];

    it.each(cases)('refuses %s', async (_name, run) => {
      const [answer, code] = await run(host);
      const failed = expectFail(answer, code);
      expect(failed.message.length).toBeGreaterThan(8);
      await nothingLeft();
    });

    it("refuses someone else's avatar Id and leaves their avatar as it was", async () => {
      const avatarId = expectOk(
        await upload(host, bob, { name: 'b.hna', data: 'bob' }, { avatarMeta: avatarMeta() }),
      ).AvatarId as string;
      const before = JSON.stringify(await host.server.uploads.avatar(avatarId));
      const treeBefore = await blobTree(host.dir);
      expectFail(
        await upload(host, alice, { name: 'a.hna', data: 'x' }, { avatarMeta: avatarMeta({ Id: avatarId }) }),
        'NOT_OWNER',
      );
      expect(JSON.stringify(await host.server.uploads.avatar(avatarId))).toBe(before);
      expect(await blobTree(host.dir)).toEqual(treeBefore);
      expectFail(
        await upload(
          host,
          alice,
          { name: 'a.hna', data: 'x' },
          { avatarMeta: avatarMeta({ Id: 'avatar_nope' }) },
        ),
        'CONTENT_NOT_FOUND',
      );
    });

    it('keeps a traversal in the file name out of the path', async () => {
      const result = expectOk(await upload(host, alice, { name: '../../../../etc/evil.png', data: 'x' }));
      const up = result.UploadData as { FileName: string; FileId: string };
      expect(up.FileName).toBe(`${up.FileId}.png`);
      expect(await blobTree(host.dir)).toEqual([`files/${alice.id}/${up.FileName}`]);
    });

    it('refuses a body declared larger than the limit before reading it', async () => {
      const answer = await new Promise<string>((resolve, reject) => {
        const req = request(`${host.server.url}/api/v1/upload`, {
          method: 'POST',
          headers: {
            'content-type': 'multipart/form-data; boundary=x',
            'content-length': String(10 * 1024 * 1024),
          },
        });
        req.on('response', (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve(body));
        });
        req.on('error', reject);
        // Only a few bytes are ever sent: the answer must come without the rest.
        req.write('--x\r\n');
      });
      expect(JSON.parse(answer)).toMatchObject({
        success: false,
        result: { error: { code: 'FILE_TOO_LARGE' } },
      });
      await nothingLeft();
    });

    it('cuts off a streamed (chunked-encoding) body at the limit and keeps nothing', async () => {
      const boundary = 'B0undary';
      const head = `--${boundary}\r\nContent-Disposition: form-data; name="userid"\r\n\r\n${alice.id}\r\n--${boundary}\r\nContent-Disposition: form-data; name="tokenContent"\r\n\r\n${alice.token}\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.png"\r\n\r\n`;
      const answer = await new Promise<string>((resolve, reject) => {
        const req = request(`${host.server.url}/api/v1/upload`, {
          method: 'POST',
          headers: {
            'content-type': `multipart/form-data; boundary=${boundary}`,
            'transfer-encoding': 'chunked',
          },
        });
        req.on('response', (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve(body));
        });
        req.on('error', reject);
        req.write(head);
        for (let i = 0; i < 20; i++) req.write(Buffer.alloc(8 * 1024, 1));
        req.end(`\r\n--${boundary}--\r\n`);
      });
      expect(JSON.parse(answer)).toMatchObject({
        success: false,
        result: { error: { code: 'FILE_TOO_LARGE' } },
      });
      await nothingLeft();
    });

    it('keeps nothing when the client disconnects mid-upload, and keeps serving', async () => {
      const boundary = 'B0undary';
      const head = `--${boundary}\r\nContent-Disposition: form-data; name="userid"\r\n\r\n${alice.id}\r\n--${boundary}\r\nContent-Disposition: form-data; name="tokenContent"\r\n\r\n${alice.token}\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\n`;
      await new Promise<void>((resolve) => {
        const req = request(`${host.server.url}/api/v1/upload`, {
          method: 'POST',
          headers: {
            'content-type': `multipart/form-data; boundary=${boundary}`,
            'content-length': String(head.length + 40_000),
          },
        });
        req.on('error', () => resolve());
        req.write(head);
        req.write(Buffer.alloc(20_000, 7));
        setTimeout(() => {
          req.destroy();
          resolve();
        }, 100);
      });
      await new Promise((r) => setTimeout(r, 200));
      await nothingLeft();
      expectOk(await upload(host, alice, { name: 'a.png', data: 'fine' }));
    });
  });

  describe('concurrent overwrites', () => {
    it('lets one of two simultaneous uploads with the same Id win the build and orphans no file', async () => {
      const avatarId = expectOk(
        await upload(host, alice, { name: 'a.hna', data: 'v0' }, { avatarMeta: avatarMeta() }),
      ).AvatarId as string;
      const answers = await Promise.all(
        ['v1', 'v2', 'v3'].map((data) =>
          upload(host, alice, { name: 'a.hna', data }, { avatarMeta: avatarMeta({ Id: avatarId }) }),
        ),
      );
      for (const answer of answers) expectOk(answer, 'Uploaded Avatar!');
      const meta = (await host.server.uploads.avatar(avatarId))!;
      expect(meta.Builds).toHaveLength(1);
      expect(await blobTree(host.dir)).toEqual([`files/${alice.id}/${meta.Builds[0]!.FileId}.hna`]);
      expect((await host.server.users.get(alice.id))!.Avatars).toEqual([avatarId]);
    });
  });

  describe('chunked uploads', () => {
    const part = (chunkId: string, n: number, data: string, extra: Record<string, string> = {}) =>
      upload(
        host,
        alice,
        { name: 'blob', data },
        {
          chunkId,
          chunkNumber: String(n),
          amountOfChunks: '3',
          originalFileName: 'big.hna',
          avatarMeta: avatarMeta(),
          ...extra,
        },
        'uploadPart',
      );

    it('puts a set together anew after a crash while it was being put together', async () => {
      const chunkId = expectOk(await part('', 0, 'AAA')).chunkId as string;
      expectOk(await part(chunkId, 1, 'BBB'));
      // As a host killed while putting it together leaves it (an earlier run of this host claimed it).
      await host.server.store.tx(async (t) => {
        const sets = t.repo<Record<string, unknown>>('chunksets');
        const set = (await sets.get(chunkId))!;
        sets.put(chunkId, { ...set, assembling: true, assemblingBy: 'before-the-crash', assemblingAt: 0 });
      });
      const done = expectOk(await part(chunkId, 2, 'CCC'), 'Uploaded Avatar!');
      expect(done.UploadData).toMatchObject({ Hash: md5('AAABBBCCC'), Size: 9 });
    });

    it('takes chunks in any order, tells which it holds, and answers the last with the whole upload', async () => {
      const first = expectOk(await part('', 2, 'CCC'), 'Uploaded Chunk!');
      const chunkId = first.chunkId as string;
      expect(chunkId).toMatch(/^[0-9A-Za-z]{50}$/);
      expect(first).toMatchObject({ chunkNumber: 2, missingChunks: [0, 1] });
      expectOk(await part(chunkId, 0, 'AAA'));
      const status = expectOk(
        await host.post('uploadPartStatus', { userid: alice.id, tokenContent: alice.token, chunkId }),
      );
      expect(status).toMatchObject({
        chunkId,
        amountOfChunks: 3,
        received: [0, 2],
        receivedBytes: 6,
        originalFileName: 'big.hna',
      });
      expectFail(
        await host.post('uploadPartStatus', { userid: bob.id, tokenContent: bob.token, chunkId }),
        'UNKNOWN_CHUNK_SET',
      );
      const last = expectOk(await part(chunkId, 1, 'BBB'), 'Uploaded Avatar!');
      expect(last.UploadData).toMatchObject({ Hash: md5('AAABBBCCC'), Size: 9, UploadType: 1 });
      expect(last.AvatarId).toMatch(/^avatar_/);
      const tree = await blobTree(host.dir);
      expect(tree).toEqual([`files/${alice.id}/${(last.UploadData as { FileName: string }).FileName}`]);
    });

    it('keeps a set with a missing chunk unassembled, listing what is missing', async () => {
      const first = expectOk(await part('', 0, 'AAA'));
      const chunkId = first.chunkId as string;
      const third = expectOk(await part(chunkId, 2, 'CCC'), 'Uploaded Chunk!');
      expect(third.missingChunks).toEqual([1]);
      expect(await host.server.uploads.filesOf(alice.id)).toEqual([]);
      expect((await host.server.users.get(alice.id))!.Avatars).toEqual([]);
    });

    it.each([
      ['a traversal chunk id', '../../etc', 'INVALID_CHUNK'],
      ['an unknown chunk id', 'A'.repeat(50), 'UNKNOWN_CHUNK_SET'],
    ])('refuses %s and stores nothing', async (_name, chunkId, code) => {
      expectFail(await part(chunkId, 0, 'AAA'), code);
      await nothingLeft();
    });

    it('refuses chunk numbers out of range and a bad extension', async () => {
      expectFail(await part('', 3, 'AAA'), 'INVALID_CHUNK');
      expectFail(await part('', -1 as unknown as number, 'AAA'), 'INVALID_CHUNK');
      expectFail(
        await upload(
          host,
          alice,
          { name: 'x', data: 'A' },
          { chunkId: '', chunkNumber: '0', amountOfChunks: '2', originalFileName: 'evil.exe' },
          'uploadPart',
        ),
        'FILE_TYPE_NOT_ALLOWED',
      );
      await nothingLeft();
    });

    it('refuses a chunk of an expired set and removes the set', async () => {
      const chunkId = expectOk(await part('', 0, 'AAA')).chunkId as string;
      clock.advance(3601);
      expectFail(await part(chunkId, 1, 'BBB'), 'UNKNOWN_CHUNK_SET');
      await nothingLeft();
    });

    it('sweeps abandoned chunk sets', async () => {
      expectOk(await part('', 0, 'AAA'));
      // The part alone: the set's state is a record in the store (no meta.json any more).
      expect((await blobTree(host.dir)).length).toBe(1);
      clock.advance(3601);
      expect(await host.server.uploads.sweepChunkSets()).toBe(1);
      await nothingLeft();
    });

    it('keeps a chunk set across a restart: its state is in the store, no meta.json is written', async () => {
      const chunkId = expectOk(await part('', 0, 'AAA')).chunkId as string;
      expectOk(await part(chunkId, 2, 'CCC'));
      expect(await readdir(join(host.dir, 'chunks', chunkId))).not.toContain('meta.json');
      const dir = host.dir;
      await host.server.close();
      host = await startHost(
        { uploads: { maxFileBytes: 64 * 1024, chunkSetTtlSeconds: 3600 } },
        { clock, dir },
      );
      expect(
        expectOk(
          await host.post('uploadPartStatus', { userid: alice.id, tokenContent: alice.token, chunkId }),
        ),
      ).toMatchObject({ received: [0, 2], receivedBytes: 6 });
      const last = expectOk(await part(chunkId, 1, 'BBB'), 'Uploaded Avatar!');
      expect(last.UploadData).toMatchObject({ Hash: md5('AAABBBCCC'), Size: 9 });
      expect(await blobTree(dir)).toEqual([
        `files/${alice.id}/${(last.UploadData as { FileName: string }).FileName}`,
      ]);
    });

    it('takes a chunk sent again in place of the one held, keeping one part for it', async () => {
      const chunkId = expectOk(await part('', 0, 'old')).chunkId as string;
      expectOk(await part(chunkId, 0, 'AAA'));
      expect(await readdir(join(host.dir, 'chunks', chunkId))).toHaveLength(1);
      expect(
        expectOk(
          await host.post('uploadPartStatus', { userid: alice.id, tokenContent: alice.token, chunkId }),
        ),
      ).toMatchObject({ received: [0], receivedBytes: 3 });
      expectOk(await part(chunkId, 1, 'BBB'));
      const last = expectOk(await part(chunkId, 2, 'CCC'), 'Uploaded Avatar!');
      expect(last.UploadData).toMatchObject({ Hash: md5('AAABBBCCC'), Size: 9 });
    });

    it('imports a chunk set of the earlier layout (chunks/<id>/meta.json) once at startup', async () => {
      const dir = host.dir;
      await host.server.close();
      const chunkId = 'L'.repeat(50);
      const expired = 'E'.repeat(50);
      const now = Math.floor(clock.now() / 1000);
      const legacy = (id: string, updatedAt: number) =>
        JSON.stringify({
          chunkId: id,
          userId: alice.id,
          originalFileName: 'old.hna',
          amountOfChunks: 2,
          createdAt: updatedAt,
          updatedAt,
          received: { '0': 3 },
        });
      for (const [id, at] of [
        [chunkId, now - 60],
        [expired, now - 7200],
      ] as const) {
        await mkdir(join(dir, 'chunks', id), { recursive: true });
        await writeFile(join(dir, 'chunks', id, '0.part'), 'OLD');
        await writeFile(join(dir, 'chunks', id, 'meta.json'), legacy(id, at));
      }
      host = await startHost(
        { uploads: { maxFileBytes: 64 * 1024, chunkSetTtlSeconds: 3600 } },
        { clock, dir },
      );
      // The live one is a record now (its meta.json gone); the expired one was removed.
      expect(await blobTree(dir)).toEqual([`chunks/${chunkId}/0.part`]);
      expect(await host.server.store.collection('chunksets').has(chunkId)).toBe(true);
      expect(
        expectOk(
          await host.post('uploadPartStatus', { userid: alice.id, tokenContent: alice.token, chunkId }),
        ),
      ).toMatchObject({ received: [0], receivedBytes: 3, originalFileName: 'old.hna', amountOfChunks: 2 });
      const last = expectOk(
        await upload(
          host,
          alice,
          { name: 'blob', data: 'NEW' },
          { chunkId, chunkNumber: '1', amountOfChunks: '2', originalFileName: 'old.hna' },
          'uploadPart',
        ),
        'Uploaded File!',
      );
      expect(last.UploadData).toMatchObject({ Hash: md5('OLDNEW'), Size: 6 });
      expect(await host.server.store.collection('chunksets').count()).toBe(0);
    });

    it('refuses a set that grows past the size limit', async () => {
      const big = 'x'.repeat(40 * 1024);
      const chunkId = expectOk(await part('', 0, big)).chunkId as string;
      expectFail(await part(chunkId, 1, big), 'FILE_TOO_LARGE');
      await nothingLeft();
    });
  });

  it('survives a restart with its files, removes orphaned files and temp leftovers of ours, and leaves strangers', async () => {
    const up = expectOk(await upload(host, alice, { name: 'keep.png', data: 'kept' })).UploadData as {
      FileName: string;
    };
    const dir = host.dir;
    await host.server.close();
    const { writeFile, mkdir } = await import('node:fs/promises');
    await writeFile(join(dir, 'files', alice.id, 'file_00000000-0000-4000-8000-000000000000.png'), 'orphan');
    await mkdir(join(dir, 'tmp'), { recursive: true });
    await writeFile(join(dir, 'tmp', `${'ab'.repeat(16)}.part`), 'half');
    // Files whose names do not prove they are ours stay (and are logged), wherever they are.
    await writeFile(join(dir, 'tmp', 'notes.txt'), 'mine');
    await writeFile(join(dir, 'files', alice.id, 'holiday.jpg'), 'mine');
    host = await startHost({}, { clock, dir });
    expect(await blobTree(dir)).toEqual(
      [`files/${alice.id}/${up.FileName}`, `files/${alice.id}/holiday.jpg`, 'tmp/notes.txt'].sort(),
    );
    expect((await stat(join(dir, 'files', alice.id, up.FileName))).size).toBe(4);
  });
});
