import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type HostServer } from '../../server/host.js';
import { launchBrowser, openTab } from './harness.js';

/**
 * Today's web dashboard is a page of another origin: before anything else it asks getCDNs, then posts files to the
 * CDN it names (`Server + "upload"`) and attaches them with update/avatar (issue 26). A page of another origin
 * doing exactly that in Chromium, against a host that allows its origin (--allowed-origin), and one it does not.
 */

/** The dashboard's calls, as its scripts make them (fetch, FormData with userid, tokenContent, file). */
const DASHBOARD = `<!doctype html><meta charset="utf-8"><title>dashboard</title><pre id="out">working</pre>
<script type="module">
const params = new URLSearchParams(location.search);
const api = params.get('api');
const out = document.getElementById('out');
try {
  const cdns = await (await fetch(api + 'getCDNs')).json();
  const server = cdns.result.servers[0].Server;
  const form = new FormData();
  form.append('userid', params.get('userid'));
  form.append('tokenContent', params.get('token'));
  form.append('file', new Blob(['avatar build bytes']), 'bot.hna');
  const uploaded = await (await fetch(server + 'upload', { method: 'POST', body: form })).json();
  const meta = { Id: '', Publicity: 0, Name: 'From the dashboard', Description: '', Tags: [], ImageURL: '', BuildPlatform: 0 };
  const attached = await (
    await fetch(api + 'update/avatar', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        userid: params.get('userid'),
        tokenContent: params.get('token'),
        fileid: uploaded.result.UploadData.FileId,
        avatarmeta: JSON.stringify(meta),
      }),
    })
  ).json();
  out.textContent = JSON.stringify({ server, uploaded, attached });
} catch (error) {
  out.textContent = JSON.stringify({ failed: String(error) });
}
</script>`;

let browser: Browser;
let page: Server;
let pageOrigin: string;

beforeAll(async () => {
  page = createHttpServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(DASHBOARD));
  page.listen(0, '127.0.0.1');
  await once(page, 'listening');
  pageOrigin = `http://127.0.0.1:${(page.address() as AddressInfo).port}`;
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  page?.close();
});

async function withHost<R>(allowedOrigins: string[], run: (server: HostServer) => Promise<R>): Promise<R> {
  const dataDir = await mkdtemp(join(tmpdir(), 'hypernex-e2e-cdn-'));
  const server = await createServer({
    dataDir,
    host: '127.0.0.1',
    port: 0,
    uiDir: null,
    allowedOrigins,
    passwordHash: { memoryCost: 1024, timeCost: 1, concurrency: 2 },
  });
  try {
    return await run(server);
  } finally {
    await server.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function runDashboard(
  server: HostServer,
): Promise<{ userId: string; result: Record<string, unknown> }> {
  const { user, token } = await server.accounts.createUser({
    username: 'creator',
    password: 'Passw0rd!',
    email: 'creator@example.com',
  });
  const tab = await openTab(browser);
  try {
    const query = new URLSearchParams({
      api: `${server.url}/api/v1/`,
      userid: user.Id,
      token: token.content,
    });
    await tab.page.goto(`${pageOrigin}/?${query.toString()}`);
    await expect.poll(() => tab.page.textContent('#out'), { timeout: 15_000 }).not.toBe('working');
    return {
      userId: user.Id,
      result: JSON.parse((await tab.page.textContent('#out'))!) as Record<string, unknown>,
    };
  } finally {
    await tab.close();
  }
}

describe('the official dashboard, a page of another origin', () => {
  it('finds this host as its CDN, uploads a build to it and attaches it to a new avatar', async () => {
    await withHost([pageOrigin], async (server) => {
      const { userId, result } = await runDashboard(server);
      expect(result.server).toBe(`${server.url}/api/v1/`);
      const uploaded = result.uploaded as { success: boolean; result: { UploadData: { FileType: number } } };
      expect(uploaded.success).toBe(true);
      expect(uploaded.result.UploadData.FileType).toBe(1);
      const attached = result.attached as { success: boolean; message: string; result: { AvatarId: string } };
      expect(attached).toMatchObject({ success: true, message: 'Uploaded Avatar!' });
      const avatar = await server.uploads.avatar(attached.result.AvatarId);
      expect(avatar).toMatchObject({ Name: 'From the dashboard', OwnerId: userId });
      expect((await server.users.get(userId))!.Avatars).toEqual([attached.result.AvatarId]);
    });
  }, 60_000);

  it('refuses the same page when its origin is not allowed, and nothing is written', async () => {
    await withHost([], async (server) => {
      const { userId, result } = await runDashboard(server);
      expect(result.failed).toEqual(expect.any(String));
      expect(await server.uploads.filesOf(userId)).toEqual([]);
      expect((await server.users.get(userId))!.Avatars).toEqual([]);
    });
  }, 60_000);
});
