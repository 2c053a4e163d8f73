import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ConfigOverrides } from '../../server/config.js';
import type { BuildVersionDto } from '../../server/protocol/builds.js';
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

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** Every file under builds/, to show what a refusal left (nothing) and what a publication wrote. */
async function buildTree(dir: string): Promise<string[]> {
  const out: string[] = [];
  async function walk(path: string, rel: string): Promise<void> {
    let entries;
    try {
      entries = await readdir(path, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(join(path, entry.name), child);
      else out.push(child);
    }
  }
  await walk(join(dir, 'builds'), '');
  return out.sort();
}

interface PublishFile {
  name: string;
  data: string;
}

/**
 * A multipart publication as HypernexSharp and the CCK write uploads: text fields first, then the file parts,
 * each named "file" with its file name.
 */
async function publish(
  host: TestHost,
  who: Account,
  name: string,
  version: string,
  files: PublishFile[],
  options: { fieldsAfterFiles?: boolean } = {},
): Promise<Answer> {
  const form = new FormData();
  const fields = (): void => {
    form.append('userid', who.id);
    form.append('tokenContent', who.token);
    form.append('name', name);
    form.append('version', version);
  };
  if (!options.fieldsAfterFiles) fields();
  for (const file of files)
    form.append('file', new Blob([file.data], { type: 'application/octet-stream' }), file.name);
  if (options.fieldsAfterFiles) fields();
  const res = await host.raw('builds/publish', { method: 'POST', body: form });
  expect(res.status).toBe(200);
  return (await res.json()) as Answer;
}

/** getBuild as the dashboard and launcher send it: JSON body. */
function getBuild(host: TestHost, path: string, body: unknown, headers: Record<string, string> = {}) {
  return host.raw(`getBuild/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

/** A request with its path sent exactly as written (fetch would resolve `%2e%2e` segments itself). */
function literal(host: TestHost, method: string, path: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${host.server.url}/api/v1/${path}`, { method }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve(JSON.parse(text) as Answer));
    });
    req.on('error', reject);
    req.end();
  });
}

async function envelope(res: Response): Promise<Answer> {
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/application\/json/);
  return (await res.json()) as Answer;
}

describe('client builds', () => {
  let host: TestHost;
  let owner: Account;
  let admin: Account;
  let player: Account;
  const clock = manualClock();

  async function setRank(account: Account, rank: number): Promise<void> {
    await editUser(host, account.id, (draft) => {
      draft.Rank = rank as 0;
    });
  }

  async function start(overrides: ConfigOverrides = {}): Promise<void> {
    host = await startHost(overrides, { clock });
    owner = await signUp(host, 'owner');
    admin = await signUp(host, 'admin');
    player = await signUp(host, 'player');
    await setRank(owner, 6);
    await setRank(admin, 5);
  }

  afterEach(() => host.close());

  describe('publishing and downloading', () => {
    beforeEach(() => start());

    it('answers an empty version list for a name with no builds, never a failure', async () => {
      for (const name of [
        'Hypernex.Unity',
        'Hypernex.Launcher',
        'Hypernex.CCK',
        'Hypernex.Networking.Server',
      ]) {
        expect(expectOk(await host.get(`getVersions/${name}`), 'Got versions!')).toEqual({
          Name: name,
          Versions: [],
        });
      }
      // A name that cannot be a folder name is simply a name with no builds.
      expect(expectOk(await literal(host, 'GET', 'getVersions/..%2F..%2Fetc'))).toEqual({
        Name: '../../etc',
        Versions: [],
      });
      expect(expectOk(await host.get('authForBuilds'), 'Got Information')).toEqual({ authForBuilds: false });
    });

    it('publishes a version with several files into the data folder, listed newest first', async () => {
      const answer = expectOk(
        await publish(host, owner, 'Hypernex.Unity', '2024.10.1b', [
          { name: 'Hypernex-Windows.zip', data: 'windows build' },
          { name: 'Hypernex-Linux.tar.gz', data: 'linux build' },
        ]),
        'Published build!',
      );
      const build = answer.Build as BuildVersionDto;
      expect(build).toEqual({
        Name: 'Hypernex.Unity',
        Version: '2024.10.1b',
        PublishedAt: Math.floor(clock.now() / 1000),
        PublishedBy: owner.id,
        Files: [
          { Index: 0, FileName: 'Hypernex-Linux.tar.gz', Size: 11, Hash: sha256('linux build') },
          { Index: 1, FileName: 'Hypernex-Windows.zip', Size: 13, Hash: sha256('windows build') },
        ],
      });
      // Plain files in the data folder, with the manifest beside them; nothing left in staging.
      expect(await buildTree(host.dir)).toEqual([
        'Hypernex.Unity/2024.10.1b/.companion-build.json',
        'Hypernex.Unity/2024.10.1b/Hypernex-Linux.tar.gz',
        'Hypernex.Unity/2024.10.1b/Hypernex-Windows.zip',
      ]);
      const manifest = JSON.parse(
        await readFile(join(host.dir, 'builds/Hypernex.Unity/2024.10.1b/.companion-build.json'), 'utf8'),
      ) as BuildVersionDto;
      expect(manifest).toEqual(build);
      expect(
        await readFile(join(host.dir, 'builds/Hypernex.Unity/2024.10.1b/Hypernex-Windows.zip'), 'utf8'),
      ).toBe('windows build');

      clock.advance(60);
      expectOk(await publish(host, admin, 'Hypernex.Unity', '2024.11.0', [{ name: 'a.zip', data: 'newer' }]));
      expect(expectOk(await host.get('getVersions/Hypernex.Unity'))).toEqual({
        Name: 'Hypernex.Unity',
        Versions: ['2024.11.0', '2024.10.1b'],
      });
      const list = expectOk(await host.get('builds'), 'Got builds');
      expect(list.authForBuilds).toBe(false);
      expect(list.Builds).toEqual([
        {
          Name: 'Hypernex.Unity',
          Versions: [expect.objectContaining({ Version: '2024.11.0' }), build],
        },
      ]);
    });

    it('orders versions published in the same second by version number', async () => {
      for (const version of ['1.9.0', '1.10.0', '1.2.0'])
        expectOk(
          await publish(host, owner, 'Hypernex.CCK', version, [{ name: 'cck.unitypackage', data: version }]),
        );
      expect(expectOk(await host.get('getVersions/Hypernex.CCK')).Versions as string[]).toEqual([
        '1.10.0',
        '1.9.0',
        '1.2.0',
      ]);
    });

    it('serves getBuild as a download: artifact index into the sorted files, 0 by default and when out of range', async () => {
      await publish(host, owner, 'Hypernex.Launcher', '1.0.0', [
        { name: 'b-setup.exe', data: 'second file' },
        { name: 'a-launcher.AppImage', data: 'first file' },
      ]);
      const first = await getBuild(host, 'Hypernex.Launcher/1.0.0', {});
      expect(first.status).toBe(200);
      expect(first.headers.get('content-disposition')).toBe('attachment; filename="a-launcher.AppImage"');
      expect(first.headers.get('x-filename')).toBe('a-launcher.AppImage');
      expect(first.headers.get('accept-ranges')).toBe('bytes');
      expect(first.headers.get('access-control-allow-origin')).toBe('*');
      expect(await first.text()).toBe('first file');
      expect(await (await getBuild(host, 'Hypernex.Launcher/1.0.0', { buildArtifact: 1 })).text()).toBe(
        'second file',
      );
      expect(await (await getBuild(host, 'Hypernex.Launcher/1.0.0', { buildArtifact: 7 })).text()).toBe(
        'first file',
      );
      expect(await (await getBuild(host, 'Hypernex.Launcher/1.0.0', { buildArtifact: -1 })).text()).toBe(
        'first file',
      );
      // A urlencoded form sends the index as text.
      const form = await host.raw('getBuild/Hypernex.Launcher/1.0.0', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'buildArtifact=1',
      });
      expect(await form.text()).toBe('second file');
    });

    it('serves a byte range of a build (a resumed download), and refuses a range past the end', async () => {
      await publish(host, owner, 'Hypernex.Unity', '1.0.0', [{ name: 'game.zip', data: '0123456789' }]);
      const part = await getBuild(host, 'Hypernex.Unity/1.0.0', { buildArtifact: 0 }, { range: 'bytes=4-7' });
      expect(part.status).toBe(206);
      expect(part.headers.get('content-range')).toBe('bytes 4-7/10');
      expect(part.headers.get('content-length')).toBe('4');
      expect(await part.text()).toBe('4567');
      const tail = await getBuild(host, 'Hypernex.Unity/1.0.0', {}, { range: 'bytes=7-' });
      expect(await tail.text()).toBe('789');
      const bad = await getBuild(host, 'Hypernex.Unity/1.0.0', {}, { range: 'bytes=20-30' });
      expect(bad.status).toBe(416);
      expect(bad.headers.get('content-range')).toBe('bytes */10');
      expect(((await bad.json()) as Answer).result?.error?.code).toBe('RANGE_NOT_SATISFIABLE');
    });

    it('answers "Failed to deliver build!" for an unknown version or name, and for a name that cannot be one', async () => {
      await publish(host, owner, 'Hypernex.Unity', '1.0.0', [{ name: 'game.zip', data: 'x' }]);
      for (const path of ['Hypernex.Unity/9.9.9', 'Nothing/1.0.0']) {
        expectFail(
          await envelope(await getBuild(host, path, {})),
          'BUILD_NOT_FOUND',
          'Failed to deliver build!',
        );
      }
      for (const path of [
        '..%2F..%2Fetc/1.0.0',
        'Hypernex.Unity/..%2F1.0.0',
        '..%2Fbuilds%2FHypernex.Unity/1.0.0',
      ]) {
        expectFail(
          await literal(host, 'POST', `getBuild/${path}`),
          'BUILD_NOT_FOUND',
          'Failed to deliver build!',
        );
        expectFail(await literal(host, 'GET', `getBuild/${path}/0`), 'BUILD_NOT_FOUND');
      }
    });

    it('finds a name whatever its case, keeping the first spelling', async () => {
      await publish(host, owner, 'Hypernex.Unity', '1.0.0', [{ name: 'game.zip', data: 'x' }]);
      expectOk(await publish(host, owner, 'hypernex.unity', '1.0.1', [{ name: 'game.zip', data: 'y' }]));
      expect(expectOk(await host.get('getVersions/HYPERNEX.UNITY')).Versions).toEqual(['1.0.1', '1.0.0']);
      expect((await buildTree(host.dir)).filter((f) => f.endsWith('game.zip'))).toEqual([
        'Hypernex.Unity/1.0.0/game.zip',
        'Hypernex.Unity/1.0.1/game.zip',
      ]);
    });

    it('removes a version (admins), its files with it', async () => {
      await publish(host, owner, 'Hypernex.Unity', '1.0.0', [{ name: 'game.zip', data: 'x' }]);
      await publish(host, owner, 'Hypernex.Unity', '1.0.1', [{ name: 'game.zip', data: 'y' }]);
      expectFail(
        await host.post('builds/remove', {
          userid: player.id,
          tokenContent: player.token,
          name: 'Hypernex.Unity',
          version: '1.0.0',
        }),
        'FORBIDDEN',
      );
      const removed = expectOk(
        await host.post('builds/remove', {
          userid: admin.id,
          tokenContent: admin.token,
          name: 'Hypernex.Unity',
          version: '1.0.0',
        }),
        'Removed build!',
      );
      expect((removed.Build as BuildVersionDto).Version).toBe('1.0.0');
      expect(expectOk(await host.get('getVersions/Hypernex.Unity')).Versions).toEqual(['1.0.1']);
      expect(await buildTree(host.dir)).toEqual([
        'Hypernex.Unity/1.0.1/.companion-build.json',
        'Hypernex.Unity/1.0.1/game.zip',
      ]);
      expectFail(
        await host.post('builds/remove', {
          userid: admin.id,
          tokenContent: admin.token,
          name: 'Hypernex.Unity',
          version: '1.0.0',
        }),
        'BUILD_NOT_FOUND',
      );
      expectFail(
        await host.post('builds/remove', {
          userid: admin.id,
          tokenContent: admin.token,
          name: '../x',
          version: '1.0.0',
        }),
        'INVALID_PARAMETERS',
      );
    });

    it('lets one of two simultaneous publications of a version win and refuses the other', async () => {
      const answers = await Promise.all([
        publish(host, owner, 'Hypernex.Unity', '1.0.0', [{ name: 'a.zip', data: 'one' }]),
        publish(host, admin, 'Hypernex.Unity', '1.0.0', [{ name: 'b.zip', data: 'two' }]),
      ]);
      expect(answers.filter((a) => a.success)).toHaveLength(1);
      expect(answers.find((a) => !a.success)?.result?.error?.code).toBe('BUILD_EXISTS');
      const tree = await buildTree(host.dir);
      expect(tree).toHaveLength(2);
      expect(tree.every((f) => f.startsWith('Hypernex.Unity/1.0.0/'))).toBe(true);
    });
  });

  describe('refusals of a publication, each leaving nothing', () => {
    beforeEach(() => start({ uploads: { maxFileBytes: 64 } }));

    const ok = [{ name: 'game.zip', data: 'bytes' }];
    const cases: Array<[string, () => Promise<Answer>, string, string?]> = [
      ['a registered player', () => publish(host, player, 'Hypernex.Unity', '1.0.0', ok), 'FORBIDDEN'],
      [
        'a wrong token',
        () => publish(host, { ...admin, token: 'wrong' }, 'Hypernex.Unity', '1.0.0', ok),
        'INVALID_TOKEN',
      ],
      [
        'a name that climbs out of the folder',
        () => publish(host, admin, '../evil', '1.0.0', ok),
        'INVALID_PARAMETERS',
        'name',
      ],
      ['a name of dots', () => publish(host, admin, '..', '1.0.0', ok), 'INVALID_PARAMETERS', 'name'],
      ['a name with a slash', () => publish(host, admin, 'a/b', '1.0.0', ok), 'INVALID_PARAMETERS', 'name'],
      ['a hidden name', () => publish(host, admin, '.staging', '1.0.0', ok), 'INVALID_PARAMETERS', 'name'],
      ['a reserved name', () => publish(host, admin, 'CON', '1.0.0', ok), 'INVALID_PARAMETERS', 'name'],
      [
        'a version that climbs out of the folder',
        () => publish(host, admin, 'Hypernex.Unity', '../../etc', ok),
        'INVALID_PARAMETERS',
        'version',
      ],
      [
        'an empty version',
        () => publish(host, admin, 'Hypernex.Unity', '', ok),
        'INVALID_PARAMETERS',
        'version',
      ],
      [
        'a file name with a character Windows forbids',
        () => publish(host, admin, 'Hypernex.Unity', '1.0.0', [{ name: 'evil|name.exe', data: 'x' }]),
        'INVALID_PARAMETERS',
        'file',
      ],
      [
        'a file name ending in a dot',
        () => publish(host, admin, 'Hypernex.Unity', '1.0.0', [{ name: 'game.', data: 'x' }]),
        'INVALID_PARAMETERS',
        'file',
      ],
      [
        'a hidden file name (the manifest could be overwritten)',
        () =>
          publish(host, admin, 'Hypernex.Unity', '1.0.0', [{ name: '.companion-build.json', data: '{}' }]),
        'INVALID_PARAMETERS',
        'file',
      ],
      [
        'a file sent twice',
        () =>
          publish(host, admin, 'Hypernex.Unity', '1.0.0', [
            { name: 'game.zip', data: 'a' },
            { name: 'GAME.zip', data: 'b' },
          ]),
        'INVALID_PARAMETERS',
        'file',
      ],
      [
        'a file over the size limit (after a good one)',
        () =>
          publish(host, admin, 'Hypernex.Unity', '1.0.0', [
            { name: 'small.zip', data: 'fine' },
            { name: 'big.zip', data: 'x'.repeat(65) },
          ]),
        'FILE_TOO_LARGE',
      ],
      ['no file', () => publish(host, admin, 'Hypernex.Unity', '1.0.0', []), 'NO_FILE'],
      [
        'fields sent after the files',
        () => publish(host, admin, 'Hypernex.Unity', '1.0.0', ok, { fieldsAfterFiles: true }),
        'INVALID_PARAMETERS',
      ],
      [
        'a JSON body',
        async () =>
          host.post('builds/publish', {
            userid: admin.id,
            tokenContent: admin.token,
            name: 'Hypernex.Unity',
            version: '1.0.0',
          }),
        'INVALID_PARAMETERS',
      ],
    ];

    it.each(cases)('refuses %s', async (_name, send, code, field) => {
      const answer = expectFail(await send(), code);
      if (field) expect(answer.result?.error?.fields?.[field], JSON.stringify(answer)).toBeTruthy();
      expect(await buildTree(host.dir)).toEqual([]);
      expect(expectOk(await host.get('builds')).Builds).toEqual([]);
    });

    it('keeps only the base name of a file part named with a path, inside the version folder', async () => {
      expectOk(await publish(host, admin, 'Hypernex.Unity', '1.0.0', [{ name: '../../evil.sh', data: 'x' }]));
      expect(await buildTree(host.dir)).toEqual([
        'Hypernex.Unity/1.0.0/.companion-build.json',
        'Hypernex.Unity/1.0.0/evil.sh',
      ]);
    });

    it('refuses a version that is already published and leaves it as it was', async () => {
      expectOk(
        await publish(host, admin, 'Hypernex.Unity', '1.0.0', [{ name: 'game.zip', data: 'original' }]),
      );
      const before = await buildTree(host.dir);
      expectFail(
        await publish(host, owner, 'Hypernex.Unity', '1.0.0', [{ name: 'other.zip', data: 'replacement' }]),
        'BUILD_EXISTS',
      );
      expectFail(
        await publish(host, owner, 'Hypernex.Unity', '1.0.0', [{ name: 'game.zip', data: 'replacement' }]),
        'BUILD_EXISTS',
      );
      expect(await buildTree(host.dir)).toEqual(before);
      expect(await (await getBuild(host, 'Hypernex.Unity/1.0.0', {})).text()).toBe('original');
    });

    it('leaves nothing of an upload cut off in the middle of a file', async () => {
      const boundary = 'hnxboundary';
      const head =
        `--${boundary}\r\nContent-Disposition: form-data; name="userid"\r\n\r\n${admin.id}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="tokenContent"\r\n\r\n${admin.token}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nHypernex.Unity\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="version"\r\n\r\n1.0.0\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="game.zip"\r\n` +
        'Content-Type: application/octet-stream\r\n\r\n0123456789';
      await new Promise<void>((resolve) => {
        const req = request(`${host.server.url}/api/v1/builds/publish`, {
          method: 'POST',
          headers: {
            'content-type': `multipart/form-data; boundary=${boundary}`,
            'content-length': String(head.length + 1000),
          },
        });
        req.on('error', () => resolve());
        req.on('response', (res) => {
          res.resume();
          res.on('end', () => resolve());
        });
        req.write(head, () => setTimeout(() => req.destroy(), 100));
      });
      for (let i = 0; i < 50 && (await buildTree(host.dir)).length > 0; i++)
        await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await buildTree(host.dir)).toEqual([]);
      expect(expectOk(await host.get('getVersions/Hypernex.Unity')).Versions).toEqual([]);
    });
  });

  describe('when the host requires a token for builds', () => {
    beforeEach(async () => {
      await start();
      await publish(host, owner, 'Hypernex.Unity', '1.0.0', [
        { name: 'game.zip', data: '0123456789' },
        { name: 'server.zip', data: 'server' },
      ]);
      expectOk(
        await host.post('builds/settings', {
          userid: owner.id,
          tokenContent: owner.token,
          authForBuilds: true,
        }),
        'Got build settings',
      );
    });

    it('says so through authForBuilds and keeps the setting on disk', async () => {
      expect(expectOk(await host.get('authForBuilds'))).toEqual({ authForBuilds: true });
      expect(JSON.parse(await readFile(join(host.dir, 'builds/.settings.json'), 'utf8'))).toEqual({
        authForBuilds: true,
      });
    });

    it('serves a range to a signed-in player', async () => {
      const res = await getBuild(
        host,
        'Hypernex.Unity/1.0.0',
        { buildArtifact: 0, userid: player.id, tokenContent: player.token },
        { range: 'bytes=0-3' },
      );
      expect(res.status).toBe(206);
      expect(await res.text()).toBe('0123');
    });

    it('refuses a download with no credentials as "Invalid parameters!"', async () => {
      expectFail(
        await envelope(await getBuild(host, 'Hypernex.Unity/1.0.0', {})),
        'INVALID_PARAMETERS',
        'Invalid parameters!',
      );
      // The dashboard's whole token object is not a token.
      expectFail(
        await envelope(
          await getBuild(host, 'Hypernex.Unity/1.0.0', {
            userid: player.id,
            tokenContent: { content: player.token },
          }),
        ),
        'INVALID_PARAMETERS',
      );
    });

    it('refuses a wrong token as "Invalid Token!"', async () => {
      expectFail(
        await envelope(
          await getBuild(host, 'Hypernex.Unity/1.0.0', { userid: player.id, tokenContent: 'wrong' }),
        ),
        'INVALID_TOKEN',
        'Invalid Token!',
      );
    });

    it('hands a signed-in user a download link for one file that works without the token, until it expires', async () => {
      const ticket = expectOk(
        await host.post('buildTicket/Hypernex.Unity/1.0.0', {
          userid: player.id,
          tokenContent: player.token,
          buildArtifact: 1,
        }),
      );
      expect(ticket.FileName).toBe('server.zip');
      const url = `${host.server.url}${ticket.url as string}`;
      const res = await fetch(url, { headers: { range: 'bytes=1-2' } });
      expect(res.status).toBe(206);
      expect(await res.text()).toBe('er');
      // The link is for that file only.
      const other = (ticket.url as string).replace('/1?', '/0?').replace('/api/v1/', '');
      expectFail(await envelope(await host.raw(other)), 'INVALID_TOKEN');
      expectFail(
        await envelope(await host.raw('getBuild/Hypernex.Unity/1.0.0/1?ticket=made-up')),
        'INVALID_TOKEN',
      );
      expectFail(await envelope(await host.raw('getBuild/Hypernex.Unity/1.0.0/1')), 'INVALID_TOKEN');
      clock.advance(601);
      expectFail(await envelope(await fetch(url)), 'INVALID_TOKEN');
    });

    it('refuses a download link to a wrong token and for an unknown version', async () => {
      expectFail(
        await host.post('buildTicket/Hypernex.Unity/1.0.0', { userid: player.id, tokenContent: 'wrong' }),
        'INVALID_TOKEN',
      );
      expectFail(
        await host.post('buildTicket/Hypernex.Unity/2.0.0', {
          userid: player.id,
          tokenContent: player.token,
        }),
        'BUILD_NOT_FOUND',
      );
    });

    it('lets only admins change the setting', async () => {
      expectFail(
        await host.post('builds/settings', {
          userid: player.id,
          tokenContent: player.token,
          authForBuilds: false,
        }),
        'FORBIDDEN',
      );
      expectFail(
        await host.post('builds/settings', {
          userid: admin.id,
          tokenContent: admin.token,
          authForBuilds: 'no',
        }),
        'INVALID_PARAMETERS',
      );
      expect(expectOk(await host.get('authForBuilds'))).toEqual({ authForBuilds: true });
      expectOk(
        await host.post('builds/settings', {
          userid: admin.id,
          tokenContent: admin.token,
          authForBuilds: false,
        }),
      );
      expect(await (await getBuild(host, 'Hypernex.Unity/1.0.0', {})).text()).toBe('0123456789');
      // Without the requirement, a link needs no ticket.
      expect(await (await host.raw('getBuild/Hypernex.Unity/1.0.0/1')).text()).toBe('server');
    });
  });
});

describe('the builds service on its own', () => {
  it('refuses names, versions and file names that would leave the version folder', async () => {
    const { mkdtemp, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { Readable } = await import('node:stream');
    const { createBuildsService } = await import('../../server/services/builds.js');
    const dir = await mkdtemp(join(tmpdir(), 'hnx-builds-'));
    try {
      const builds = createBuildsService({
        dataDir: dir,
        fsync: false,
        clock: manualClock(),
        maxFileBytes: 100,
      });
      for (const [name, version] of [
        ['../a', '1.0'],
        ['a', '../../1.0'],
        ['a\\b', '1.0'],
        ['C:', '1.0'],
        ['', '1.0'],
        ['a', 'x/y'],
      ]) {
        await expect(builds.begin(name, version)).rejects.toMatchObject({ code: 'INVALID_PARAMETERS' });
      }
      const publication = await builds.begin('Hypernex.Unity', '1.0');
      for (const fileName of ['../x.zip', '..\\x.zip', '/etc/passwd', '.hidden', 'a/b.zip', 'nul.txt']) {
        await expect(publication.addFile(fileName, Readable.from(['x']))).rejects.toMatchObject({
          code: 'INVALID_PARAMETERS',
        });
      }
      await publication.abort();
      expect(await buildTree(dir)).toEqual([]);
      expect(await builds.artifact('../builds', '1.0', 0)).toBeNull();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
