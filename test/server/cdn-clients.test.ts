import { request as httpRequest } from 'node:http';
import { networkInterfaces } from 'node:os';
import { Secret, TOTP } from 'otpauth';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TestGameServer } from '../../server/tools/test-game-server.js';
import {
  editUser,
  expectFail,
  expectOk,
  manualClock,
  PASSWORD,
  signUp,
  startHost,
  type Account,
  type Answer,
  type TestHost,
} from './helpers.js';
import { TestSocket } from './socket-client.js';
import { avatarMeta, blobTree, md5, worldMeta } from './upload-helpers.js';
import { AVATARS, WORLDS } from '../../server/services/uploads/records.js';

/**
 * The 1.5 generation of official clients (wire reference 12): getCDNs, the CDN's upload, update/avatar and
 * update/world, instances by world, checkGameServer, the tag-filtered popularity route, and the recent sign-in that
 * confirms remove2fa and resetPassword. Every call is shaped as HypernexSharp e01b12d sends it.
 */

const GS_TOKEN = 'lan-game-server-secret';
const UNKNOWN_FILE = 'file_00000000-0000-4000-8000-000000000000';

interface UploadData {
  UserId: string;
  FileId: string;
  FileName: string;
  UploadType: number;
  FileType: number;
  Key: string;
  Hash: string;
  Size: number;
}

interface Build {
  FileId: string;
  BuildPlatform: number;
  ServerScripts?: string[];
}

/** A GET with a chosen Host header (and local address), as a client that typed another address would send it. */
function getWithHost(
  host: TestHost,
  path: string,
  hostHeader: string,
  target = '127.0.0.1',
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: target,
        port: host.server.port,
        path: `/api/v1/${path}`,
        headers: { host: hostHeader },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Answer));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The one CDN server getCDNs names. */
async function cdnOf(host: TestHost): Promise<string> {
  const result = expectOk(await host.get('getCDNs'), 'Got Information');
  const servers = result.servers as Array<{ Server: string }>;
  expect(servers).toHaveLength(1);
  return servers[0]!.Server;
}

/** POST {Server}upload as HypernexSharp e01b12d does: userid, tokenContent, then the file part. */
async function cdnUpload(
  server: string,
  account: { id: string; token: string },
  name: string,
  data: string,
): Promise<Answer> {
  const form = new FormData();
  form.append('userid', account.id);
  form.append('tokenContent', account.token);
  form.append('file', new Blob([data], { type: 'application/octet-stream' }), name);
  const res = await fetch(`${server}upload`, { method: 'POST', body: form });
  expect(res.status).toBe(200);
  return (await res.json()) as Answer;
}

describe('1.5 clients (CDN uploads, update/avatar and update/world)', () => {
  let host: TestHost;
  let alice: Account;
  let bob: Account;
  let cdn: string;

  beforeEach(async () => {
    host = await startHost({ gameServerTokens: [GS_TOKEN] });
    alice = await signUp(host, 'alice');
    bob = await signUp(host, 'bob');
    cdn = await cdnOf(host);
  });
  afterEach(async () => {
    await host.close();
  });

  const fileUrl = (owner: Account, fileId: string) => `${host.server.url}/api/v1/file/${owner.id}/${fileId}`;

  async function uploaded(owner: Account, name: string, data = `bytes of ${name}`): Promise<UploadData> {
    return expectOk(await cdnUpload(cdn, owner, name, data)).UploadData as UploadData;
  }

  /** update/avatar or update/world as UpdateAsset.cs sends it: lowercase meta key, the meta as a JSON string. */
  function update(
    kind: 'avatar' | 'world',
    account: Account,
    meta: string,
    fileid?: string,
  ): Promise<Answer> {
    return host.post(`update/${kind}`, {
      userid: account.id,
      tokenContent: account.token,
      ...(fileid !== undefined && { fileid }),
      [`${kind}meta`]: meta,
    });
  }

  async function avatarOf(id: string): Promise<{ Name: string; Builds: Build[] } & Record<string, unknown>> {
    const meta = (await host.server.uploads.avatar(id))!;
    return { ...meta };
  }

  /** Everything a refused call could have written: records, the owners' lists and the files on disk. */
  async function written(): Promise<string> {
    const avatars: unknown[] = [];
    for await (const a of host.server.store.collection(AVATARS).scan()) avatars.push(a);
    const worlds: unknown[] = [];
    for await (const w of host.server.store.collection(WORLDS).scan()) worlds.push(w);
    const files = [
      ...(await host.server.uploads.filesOf(alice.id)),
      ...(await host.server.uploads.filesOf(bob.id)),
    ];
    const lists = await Promise.all(
      [alice, bob].map(async (a) => {
        const me = expectOk(await host.post('getUser', { userid: a.id, tokenContent: a.token })).UserData as {
          Avatars: string[];
          Worlds: string[];
        };
        return { avatars: me.Avatars, worlds: me.Worlds };
      }),
    );
    return JSON.stringify({ avatars, worlds, files, lists, disk: await blobTree(host.dir) });
  }

  describe('getCDNs and the CDN upload', () => {
    it('names this host, reached at 127.0.0.1, as its only CDN', async () => {
      const answer = await host.get('getCDNs');
      expect(answer).toEqual({
        success: true,
        message: 'Got Information',
        result: { servers: [{ Server: `${host.server.url}/api/v1/`, Latitude: 0, Longitude: 0 }] },
      });
    });

    it('stores a file posted to {Server}upload, its type from the extension, with both UploadType and FileType', async () => {
      const answer = await cdnUpload(cdn, alice, 'Bot.HNA', 'avatar bytes');
      const data = expectOk(answer).UploadData as UploadData;
      expect(data).toEqual({
        UserId: alice.id,
        FileId: expect.stringMatching(/^file_[0-9a-f-]{36}$/),
        FileName: `${data.FileId}.hna`,
        UploadType: 1,
        FileType: 1,
        Key: `${alice.id}/${data.FileId}.hna`,
        Hash: md5('avatar bytes'),
        Size: 12,
      });
      for (const [name, type] of [
        ['thumb.png', 0],
        ['plaza.hnw', 2],
        ['logic.lua', 3],
      ] as const) {
        expect(await uploaded(alice, name)).toMatchObject({ UploadType: type, FileType: type });
      }
      // The bytes are served back where the 1.5 clients fetch them: Server + file/...
      const res = await fetch(`${cdn}file/${alice.id}/${data.FileId}`);
      expect(res.status).toBe(200);
    });

    it('refuses another extension and a bad token on the CDN upload, keeping nothing', async () => {
      expectFail(await cdnUpload(cdn, alice, 'tool.exe', 'MZ'), 'FILE_TYPE_NOT_ALLOWED');
      expectFail(await cdnUpload(cdn, { id: alice.id, token: 'nope' }, 'a.hna', 'x'), 'INVALID_TOKEN');
      expect(await blobTree(host.dir)).toEqual([]);
      expect(await host.server.uploads.filesOf(alice.id)).toEqual([]);
    });
  });

  describe('update/avatar with a file', () => {
    it('makes a new avatar from an uploaded file, answering UploadData nested and at the root', async () => {
      const file = await uploaded(alice, 'bot.hna');
      const answer = await update('avatar', alice, avatarMeta({ Name: 'Bot', Tags: ['robot'] }), file.FileId);
      const result = expectOk(answer, 'Uploaded Avatar!');
      const avatarId = result.AvatarId as string;
      expect(avatarId).toMatch(/^avatar_[0-9a-f-]{36}$/);
      expect(result).toEqual({ ...file, UploadData: file, AvatarId: avatarId });
      const meta = expectOk(await host.get(`meta/avatar/${avatarId}`)).Meta as Record<string, unknown>;
      expect(meta).toMatchObject({
        Id: avatarId,
        OwnerId: alice.id,
        Name: 'Bot',
        Tags: ['robot'],
        Builds: [{ FileId: file.FileId, BuildPlatform: 0 }],
      });
      const me = expectOk(await host.post('getUser', { userid: alice.id, tokenContent: alice.token }))
        .UserData as { Avatars: string[] };
      expect(me.Avatars).toEqual([avatarId]);
    });

    it('adds a build for a new platform and replaces the build of an existing one, deleting the old file', async () => {
      const windows = await uploaded(alice, 'bot.hna', 'windows build');
      const avatarId = expectOk(await update('avatar', alice, avatarMeta(), windows.FileId))
        .AvatarId as string;
      const android = await uploaded(alice, 'bot.hna', 'android build');
      const second = expectOk(
        await update(
          'avatar',
          alice,
          avatarMeta({ Id: avatarId, BuildPlatform: 1, Name: 'Bot 2' }),
          android.FileId,
        ),
        'Uploaded Avatar!',
      );
      expect(second.AvatarId).toBe(avatarId);
      expect((await avatarOf(avatarId)).Builds).toEqual([
        { FileId: windows.FileId, BuildPlatform: 0 },
        { FileId: android.FileId, BuildPlatform: 1 },
      ]);
      const newer = await uploaded(alice, 'bot.hna', 'windows build 2');
      expectOk(await update('avatar', alice, avatarMeta({ Id: avatarId }), newer.FileId), 'Uploaded Avatar!');
      const meta = await avatarOf(avatarId);
      expect(meta.Builds).toEqual([
        { FileId: android.FileId, BuildPlatform: 1 },
        { FileId: newer.FileId, BuildPlatform: 0 },
      ]);
      expect(meta.Name).toBe('Bot');
      expectFail(await host.get(`filemeta/${alice.id}/${windows.FileId}`), 'FILE_NOT_FOUND');
      expect((await blobTree(host.dir)).some((f) => f.includes(windows.FileId))).toBe(false);
    });

    it("refuses someone else's file, and writes nothing", async () => {
      const bobs = await uploaded(bob, 'bob.hna');
      const before = await written();
      const answer = expectFail(await update('avatar', alice, avatarMeta(), bobs.FileId), 'NOT_OWNER');
      expect(answer.result?.error?.fields).toEqual({ fileid: 'belongs to someone else' });
      expect(await written()).toBe(before);
    });

    it("refuses a build for someone else's avatar, and writes nothing", async () => {
      const bobsFile = await uploaded(bob, 'bob.hna');
      const bobsAvatar = expectOk(
        await update('avatar', bob, avatarMeta({ Name: 'Bobbot' }), bobsFile.FileId),
      ).AvatarId as string;
      const mine = await uploaded(alice, 'mine.hna');
      const before = await written();
      const answer = expectFail(
        await update('avatar', alice, avatarMeta({ Id: bobsAvatar, Name: 'Taken' }), mine.FileId),
        'NOT_OWNER',
      );
      expect(answer.result?.error?.fields).toEqual({ 'avatarMeta.Id': 'belongs to someone else' });
      expect(await written()).toBe(before);
      expect((await avatarOf(bobsAvatar)).Name).toBe('Bobbot');
      // Moderators are no exception: editing someone's avatar is moderation's deleteavatar, not an upload.
      await editUser(host, alice.id, (d) => {
        d.Rank = 4;
      });
      expectFail(await update('avatar', alice, avatarMeta({ Id: bobsAvatar }), mine.FileId), 'NOT_OWNER');
      expect(await written()).toBe(before);
    });

    it('refuses a file of the wrong type for the kind, and writes nothing', async () => {
      const world = await uploaded(alice, 'plaza.hnw');
      const image = await uploaded(alice, 'thumb.png');
      const before = await written();
      let answer = expectFail(
        await update('avatar', alice, avatarMeta(), world.FileId),
        'META_TYPE_MISMATCH',
      );
      expect(answer.result?.error?.fields).toEqual({ fileid: 'must be a avatar file (.hna)' });
      answer = expectFail(await update('world', alice, worldMeta(), image.FileId), 'META_TYPE_MISMATCH');
      expect(answer.result?.error?.fields).toEqual({ fileid: 'must be a world file (.hnw)' });
      expect(await written()).toBe(before);
    });

    it('refuses an unknown file id, and writes nothing', async () => {
      const before = await written();
      const answer = expectFail(await update('avatar', alice, avatarMeta(), UNKNOWN_FILE), 'FILE_NOT_FOUND');
      expect(answer.message).toMatch(/^Failed to find file!/);
      expectFail(await update('world', alice, worldMeta(), UNKNOWN_FILE), 'FILE_NOT_FOUND');
      expect(await written()).toBe(before);
    });

    it('refuses bad meta naming the fields, and writes nothing', async () => {
      const file = await uploaded(alice, 'bot.hna');
      const before = await written();
      let answer = expectFail(await update('avatar', alice, '{"Name": "Bot"', file.FileId), 'INVALID_META');
      expect(answer.result?.error?.fields).toEqual({ avatarMeta: 'is not valid JSON' });
      answer = expectFail(
        await update('avatar', alice, avatarMeta({ Name: 'x'.repeat(51), Publicity: 3 }), file.FileId),
        'INVALID_META',
      );
      expect(Object.keys(answer.result?.error?.fields ?? {}).sort()).toEqual([
        'avatarMeta.Name',
        'avatarMeta.Publicity',
      ]);
      answer = expectFail(
        await update(
          'avatar',
          alice,
          avatarMeta({ ImageURL: 'https://elsewhere.example/x.png' }),
          file.FileId,
        ),
        'INVALID_META',
      );
      expect(answer.result?.error?.fields).toHaveProperty(['avatarMeta.ImageURL']);
      expectFail(
        await host.post('update/avatar', {
          userid: alice.id,
          tokenContent: alice.token,
          fileid: file.FileId,
        }),
        'INVALID_PARAMETERS',
      );
      expect(await written()).toBe(before);
    });

    it('refuses a file that is already a build, and answers bad credentials with the envelope', async () => {
      const file = await uploaded(alice, 'bot.hna');
      expectOk(await update('avatar', alice, avatarMeta(), file.FileId));
      const before = await written();
      expectFail(await update('avatar', alice, avatarMeta(), file.FileId), 'FILE_IN_USE');
      expectFail(
        await host.post('update/avatar', {
          userid: alice.id,
          tokenContent: 'not-a-token',
          fileid: file.FileId,
          avatarmeta: avatarMeta(),
        }),
        'INVALID_TOKEN',
      );
      expect(await written()).toBe(before);
    });
  });

  describe('update/world with a file', () => {
    it('makes a world with the owner’s server scripts, and refuses scripts that are not theirs', async () => {
      const script = await uploaded(alice, 'logic.js');
      const bobsScript = await uploaded(bob, 'theirs.js');
      const world = await uploaded(alice, 'plaza.hnw');
      const before = await written();
      const refused = expectFail(
        await update(
          'world',
          alice,
          worldMeta({ ServerScripts: [fileUrl(bob, bobsScript.FileId)] }),
          world.FileId,
        ),
        'INVALID_META',
      );
      expect(refused.result?.error?.fields).toHaveProperty(['worldMeta.ServerScripts.0']);
      expect(await written()).toBe(before);
      const result = expectOk(
        await update(
          'world',
          alice,
          worldMeta({ ServerScripts: [fileUrl(alice, script.FileId)], Name: 'Plaza' }),
          world.FileId,
        ),
        'Uploaded World!',
      );
      const worldId = result.WorldId as string;
      expect(result).toEqual({ ...world, UploadData: world, WorldId: worldId });
      expect((await host.server.uploads.world(worldId))!.Builds).toEqual([
        { FileId: world.FileId, BuildPlatform: 0, ServerScripts: [fileUrl(alice, script.FileId)] },
      ]);
    });
  });

  describe('details only (no fileid)', () => {
    it('changes an avatar’s publicity, name, description, tags and image, keeping its builds', async () => {
      const file = await uploaded(alice, 'bot.hna');
      const avatarId = expectOk(await update('avatar', alice, avatarMeta(), file.FileId)).AvatarId as string;
      const image = await uploaded(alice, 'thumb.png');
      const details = JSON.stringify({
        Id: avatarId,
        Publicity: 1,
        Name: 'Renamed',
        Description: 'New words',
        Tags: ['blue'],
        ImageURL: fileUrl(alice, image.FileId),
      });
      expect(await update('avatar', alice, details)).toEqual({
        success: true,
        message: 'Updated Avatar!',
        result: { AvatarId: avatarId },
      });
      expect(await avatarOf(avatarId)).toMatchObject({
        Publicity: 1,
        Name: 'Renamed',
        Description: 'New words',
        Tags: ['blue'],
        ImageURL: fileUrl(alice, image.FileId),
        Builds: [{ FileId: file.FileId, BuildPlatform: 0 }],
      });
      expect(await host.server.uploads.filesOf(alice.id)).toHaveLength(2);
    });

    it("refuses details for someone else's avatar, or without an Id, and writes nothing", async () => {
      const file = await uploaded(bob, 'bob.hna');
      const bobsAvatar = expectOk(await update('avatar', bob, avatarMeta({ Name: 'Bobbot' }), file.FileId))
        .AvatarId as string;
      const before = await written();
      expectFail(
        await update('avatar', alice, avatarMeta({ Id: bobsAvatar, Name: 'Mine now' })),
        'NOT_OWNER',
      );
      const answer = expectFail(
        await update('avatar', alice, avatarMeta({ Name: 'Nameless' })),
        'INVALID_META',
      );
      expect(answer.result?.error?.fields).toEqual({ 'avatarMeta.Id': 'is required without a fileid' });
      expectFail(
        await update('avatar', bob, avatarMeta({ Id: bobsAvatar, Name: 'y'.repeat(51) })),
        'INVALID_META',
      );
      expect(await written()).toBe(before);
    });

    it('changes a world’s details and the server scripts of the named build, deleting the script it dropped', async () => {
      const oldScript = await uploaded(alice, 'old.js');
      const newScript = await uploaded(alice, 'new.lua');
      const icon = await uploaded(alice, 'icon.png');
      const file = await uploaded(alice, 'plaza.hnw');
      const worldId = expectOk(
        await update(
          'world',
          alice,
          worldMeta({ ServerScripts: [fileUrl(alice, oldScript.FileId)] }),
          file.FileId,
        ),
      ).WorldId as string;
      const details = worldMeta({
        Id: worldId,
        Name: 'Plaza 2',
        Tags: ['social'],
        ThumbnailURL: fileUrl(alice, icon.FileId),
        IconURLs: [fileUrl(alice, icon.FileId)],
        ServerScripts: [fileUrl(alice, newScript.FileId)],
        BuildPlatform: 0,
      });
      expect(await update('world', alice, details)).toEqual({
        success: true,
        message: 'Updated World!',
        result: { WorldId: worldId },
      });
      expect(await host.server.uploads.world(worldId)).toMatchObject({
        Name: 'Plaza 2',
        Tags: ['social'],
        ThumbnailURL: fileUrl(alice, icon.FileId),
        IconURLs: [fileUrl(alice, icon.FileId)],
        Builds: [
          { FileId: file.FileId, BuildPlatform: 0, ServerScripts: [fileUrl(alice, newScript.FileId)] },
        ],
      });
      expectFail(await host.get(`filemeta/${alice.id}/${oldScript.FileId}`), 'FILE_NOT_FOUND');
      expectOk(await host.get(`filemeta/${alice.id}/${newScript.FileId}`));
    });

    it("refuses a world's details with someone else's script or for a platform with no build, writing nothing", async () => {
      const file = await uploaded(alice, 'plaza.hnw');
      const worldId = expectOk(await update('world', alice, worldMeta(), file.FileId)).WorldId as string;
      const bobsScript = await uploaded(bob, 'theirs.js');
      const mine = await uploaded(alice, 'mine.js');
      const before = await written();
      expectFail(
        await update(
          'world',
          alice,
          worldMeta({ Id: worldId, ServerScripts: [fileUrl(bob, bobsScript.FileId)] }),
        ),
        'INVALID_META',
      );
      const answer = expectFail(
        await update(
          'world',
          alice,
          worldMeta({ Id: worldId, BuildPlatform: 1, ServerScripts: [fileUrl(alice, mine.FileId)] }),
        ),
        'INVALID_META',
      );
      expect(answer.result?.error?.fields).toHaveProperty(['worldMeta.BuildPlatform']);
      expectFail(await update('world', bob, worldMeta({ Id: worldId, Name: 'Mine' })), 'NOT_OWNER');
      expect(await written()).toBe(before);
    });
  });
});

describe('getCDNs from elsewhere', () => {
  let host: TestHost | null = null;
  afterEach(async () => {
    await host?.close();
    host = null;
  });

  it('names the configured public URL, with the API prefix and a trailing slash', async () => {
    host = await startHost({ publicUrl: 'https://hx.example.com/' });
    expect(await cdnOf(host)).toBe('https://hx.example.com/api/v1/');
    await host.close();
    host = await startHost({ publicUrl: 'http://192.168.77.5:5180' });
    expect(await cdnOf(host)).toBe('http://192.168.77.5:5180/api/v1/');
  });

  it('answers the address the request came in on when its Host is not one of the host’s own', async () => {
    host = await startHost();
    const answer = await getWithHost(host, 'getCDNs', 'dashboard.example.com');
    expect((answer.result!.servers as Array<{ Server: string }>)[0]!.Server).toBe(
      `http://127.0.0.1:${host.server.port}/api/v1/`,
    );
  });

  const lan = Object.values(networkInterfaces())
    .flat()
    .find((i) => i !== undefined && i.family === 'IPv4' && !i.internal)?.address;
  it('never names 127.0.0.1 to a client on the LAN', async () => {
    if (lan === undefined) {
      throw new Error(
        'This test needs a network interface with a non-loopback IPv4 address (a LAN address).',
      );
    }
    host = await startHost({ host: '0.0.0.0' });
    const port = host.server.port;
    const asked = await getWithHost(host, 'getCDNs', `127.0.0.1:${port}`, lan);
    expect((asked.result!.servers as Array<{ Server: string }>)[0]!.Server).toBe(
      `http://${lan}:${port}/api/v1/`,
    );
    const typed = await getWithHost(host, 'getCDNs', `${lan}:${port}`, lan);
    expect((typed.result!.servers as Array<{ Server: string }>)[0]!.Server).toBe(
      `http://${lan}:${port}/api/v1/`,
    );
  });
});

describe('instances by world, checkGameServer and tag popularity', () => {
  let host: TestHost;
  let alice: Account;
  let bob: Account;
  const closers: Array<{ close(): void }> = [];

  async function world(name: string): Promise<string> {
    const result = expectOk(
      await host.post('upload', {
        userid: alice.id,
        tokenContent: alice.token,
        file: { name: 'w.hnw', data: Buffer.from(name).toString('base64') },
        worldMeta: JSON.parse(worldMeta({ Name: name })) as unknown,
      }),
    );
    return result.WorldId as string;
  }

  async function avatar(name: string, tags: string[]): Promise<{ id: string; fileId: string }> {
    const result = expectOk(
      await host.post('upload', {
        userid: alice.id,
        tokenContent: alice.token,
        file: { name: 'a.hna', data: Buffer.from(name).toString('base64') },
        avatarMeta: JSON.parse(avatarMeta({ Name: name, Tags: tags })) as unknown,
      }),
    );
    return { id: result.AvatarId as string, fileId: (result.UploadData as { FileId: string }).FileId };
  }

  async function start(overrides: Parameters<typeof startHost>[0] = {}): Promise<void> {
    host = await startHost({ gameServerTokens: [GS_TOKEN], ...overrides });
    alice = await signUp(host, 'alice');
    bob = await signUp(host, 'bob');
  }
  afterEach(async () => {
    for (const c of closers.splice(0)) c.close();
    await host.close();
  });

  async function gameServer(): Promise<TestGameServer> {
    const gs = await TestGameServer.connect({ url: host.server.url, serverToken: GS_TOKEN });
    closers.push(gs);
    return gs;
  }

  async function openInstance(socket: TestSocket, gs: TestGameServer, worldId: string): Promise<string> {
    socket.sendJson({
      userId: alice.id,
      tokenContent: alice.token,
      message: 'RequestNewInstance',
      args: { worldId, instancePublicity: 0, instanceProtocol: 0 },
    });
    const opened = await socket.next('instanceopened');
    await gs.next(
      'updatedinstance',
      (r) => (r.instanceMeta as { InstanceId: string; Readied: boolean }).InstanceId === opened.instanceId,
    );
    return opened.instanceId as string;
  }

  it('lists only the named world’s instances when POST instances carries a worldid', async () => {
    await start();
    const plaza = await world('Plaza');
    const park = await world('Park');
    const gs = await gameServer();
    const socket = await TestSocket.verified(host.server.url, alice.id, alice.token);
    closers.push(socket);
    const inPlaza = await openInstance(socket, gs, plaza);
    const inPark = await openInstance(socket, gs, park);
    const list = async (body: Record<string, unknown>) =>
      (
        expectOk(
          await host.post('instances', { userid: bob.id, tokenContent: bob.token, ...body }),
          'Got instances',
        ).SafeInstances as Array<{ InstanceId: string; WorldId: string }>
      ).map((i) => i.InstanceId);
    expect((await list({})).sort()).toEqual([inPlaza, inPark].sort());
    expect(await list({ worldid: plaza })).toEqual([inPlaza]);
    expect(await list({ worldid: park })).toEqual([inPark]);
    expect(await list({ worldid: 'world_00000000-0000-4000-8000-000000000000' })).toEqual([]);
    expectFail(
      await host.post('instances', { userid: bob.id, tokenContent: bob.token, worldid: 5 }),
      'INVALID_PARAMETERS',
    );
  });

  it('says whether a game server is connected: with its token, or by id alone when any game server is allowed', async () => {
    await start();
    const gs = await gameServer();
    const valid = async (path: string) => expectOk(await host.get(path), 'Got Information').valid;
    expect(await valid(`checkGameServer/${gs.gameServerId}/${gs.gameServerToken}`)).toBe(true);
    expect(await valid(`checkGameServer/${gs.gameServerId}/wrong-token`)).toBe(false);
    expect(await valid(`checkGameServer/gameserver_nope/${gs.gameServerToken}`)).toBe(false);
    expect(await valid(`checkGameServer/${gs.gameServerId}`)).toBe(false);
    gs.close();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await valid(`checkGameServer/${gs.gameServerId}/${gs.gameServerToken}`)).toBe(false);
    await host.close();

    await start({ allowAnyGameServer: true });
    const any = await TestGameServer.connect({ url: host.server.url, serverToken: '' });
    closers.push(any);
    expect(await valid(`checkGameServer/${any.gameServerId}`)).toBe(true);
    expect(await valid('checkGameServer/gameserver_nope')).toBe(false);
  });

  it('ranks the public avatars carrying any of the comma-separated tags', async () => {
    await start();
    const one = await avatar('One', ['robot', 'blue']);
    const two = await avatar('Two', ['green']);
    const three = await avatar('Three', ['Robot']);
    const other = await avatar('Other', ['plain']);
    const use = async (a: { fileId: string }, times: number) => {
      for (let i = 0; i < times; i++)
        await fetch(`${host.server.url}/api/v1/file/${alice.id}/${a.fileId}`).then((r) => r.arrayBuffer());
    };
    await use(one, 1);
    await use(two, 3);
    await use(three, 2);
    await use(other, 5);
    const ids = async (path: string) =>
      (expectOk(await host.get(path), 'Got popularity').Popularity as Array<{ Id: string }>).map((p) => p.Id);
    expect(await ids('popularity/avatar/0/robot,green/10/0')).toEqual([two.id, three.id, one.id]);
    // The kind and the window in either order, as the library's two spellings have them.
    expect(await ids('popularity/0/avatar/robot,green/10/0')).toEqual([two.id, three.id, one.id]);
    expect(await ids('popularity/avatar/0/ROBOT/1/1')).toEqual([one.id]);
    expect(await ids('popularity/world/0/robot/10/0')).toEqual([]);
    expectFail(await host.get('popularity/avatar/9/robot/10/0'), 'INVALID_PARAMETERS');
    expectFail(await host.get('popularity/thing/0/robot/10/0'), 'INVALID_PARAMETERS');
    expectFail(await host.get('popularity/avatar/0/,,/10/0'), 'INVALID_PARAMETERS');
  });
});

describe('a recent password sign-in confirms remove2fa and resetPassword', () => {
  let host: TestHost;
  let clock: ReturnType<typeof manualClock>;
  let alice: Account;

  beforeEach(async () => {
    clock = manualClock();
    host = await startHost({ limits: { recentSignInSeconds: 120 } }, { clock });
    alice = await signUp(host, 'alice');
  });
  afterEach(async () => {
    await host.close();
  });

  async function login(twofacode?: string): Promise<Account> {
    const result = expectOk(
      await host.post('login', { username: 'alice', password: PASSWORD, ...(twofacode && { twofacode }) }),
      'Login Successful',
    );
    return { ...alice, token: (result.token as { content: string }).content };
  }

  async function turnOn2fa(): Promise<() => string> {
    const { otpauth_url } = expectOk(
      await host.post('enable2fa', { userid: alice.id, tokenContent: alice.token }),
    ) as { otpauth_url: string };
    const secret = new URL(otpauth_url).searchParams.get('secret')!;
    const totp = new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30 });
    const code = () => totp.generate({ timestamp: clock.now() });
    expectOk(await host.post('verify2fa', { userid: alice.id, tokenContent: alice.token, code: code() }));
    return code;
  }

  const twoFactorOn = async () => (await host.server.users.get(alice.id))!.is2FAVerified;
  const tokenAlone = (session: Account, extra: Record<string, unknown> = {}) => ({
    userid: session.id,
    tokenContent: session.token,
    ...extra,
  });

  it('removes 2FA with the token of a sign-in with its 2FA code, within the window only', async () => {
    const code = await turnOn2fa();
    // A session made before 2FA was on never passed a code: it does not count.
    expectFail(await host.post('remove2fa', tokenAlone(alice)), 'CONFIRMATION_REQUIRED');
    const stale = await login(code());
    clock.advance(120);
    const answer = expectFail(await host.post('remove2fa', tokenAlone(stale)), 'CONFIRMATION_REQUIRED');
    expect(answer.result?.error?.fields).toHaveProperty('currentPassword');
    expect(await twoFactorOn()).toBe(true);
    const fresh = await login(code());
    clock.advance(119);
    expectOk(await host.post('remove2fa', tokenAlone(fresh)), 'Removed 2FA!');
    expect(await twoFactorOn()).toBe(false);
  });

  it('changes the password with a fresh sign-in token alone, and refuses an older one', async () => {
    const hashBefore = (await host.server.users.get(alice.id))!.HashedPassword;
    clock.advance(121);
    // The sign-up token counts as a password sign-in, but it is older than the window now.
    expectFail(
      await host.post('resetPassword', tokenAlone(alice, { newPassword: 'N3w-password!' })),
      'CONFIRMATION_REQUIRED',
    );
    expect((await host.server.users.get(alice.id))!.HashedPassword).toBe(hashBefore);
    const fresh = await login();
    // A password that is sent is checked, even within the window.
    expectFail(
      await host.post(
        'resetPassword',
        tokenAlone(fresh, { newPassword: 'N3w-password!', currentPassword: 'Wr0ng!' }),
      ),
      'INCORRECT_CREDENTIALS',
    );
    expect((await host.server.users.get(alice.id))!.HashedPassword).toBe(hashBefore);
    expectOk(
      await host.post('resetPassword', tokenAlone(fresh, { newPassword: 'N3w-password!' })),
      'Reset password!',
    );
    expectOk(await host.post('login', { username: 'alice', password: 'N3w-password!' }), 'Login Successful');
  });

  it('counts a fresh sign-up, but never a session stored without how it began', async () => {
    expectOk(
      await host.post('resetPassword', tokenAlone(alice, { newPassword: 'N3w-password!' })),
      'Reset password!',
    );
    expectFail(await host.post('login', { username: 'alice', password: PASSWORD }), 'INCORRECT_CREDENTIALS');
    const again = expectOk(await host.post('login', { username: 'alice', password: 'N3w-password!' }))
      .token as { content: string };
    const session = { ...alice, token: again.content };
    // As a record written before the sign-in was kept (or a session that began any other way).
    await editUser(host, alice.id, (d) => {
      for (const token of d.AccountTokens) delete token.signIn;
    });
    expectFail(
      await host.post('resetPassword', tokenAlone(session, { newPassword: 'An0ther-pass!' })),
      'CONFIRMATION_REQUIRED',
    );
    expect(await host.post('isValidToken', tokenAlone(session))).toMatchObject({
      result: { isValidToken: true },
    });
  });
});
