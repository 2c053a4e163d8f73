import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32, deflateSync } from 'node:zlib';
import type { Browser, Page, Route } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type HostServer } from '../../server/host.js';
import type { AvatarMetaDto, UploadDataDto, WorldMetaDto } from '../../server/protocol/uploads.js';
import {
  expectNoProblems,
  fitsViewport,
  launchBrowser,
  openTab,
  OWNER,
  requireBuiltUi,
  seriousViolations,
  signIn,
  UI_DIR,
  type Tab,
} from './harness.js';

/** A real PNG of one colour, so previews load for real. */
function png(size: number, [r, g, b]: [number, number, number]): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc32(body), 8 + data.length);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(size * 3, Buffer.from([r, g, b]))]);
  const pixels = deflateSync(Buffer.concat(Array.from({ length: size }, () => row)));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', pixels),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

const VIOLET = png(48, [123, 108, 255]);
const TEAL = png(48, [63, 208, 201]);

function bytes(size: number, seed: string): Buffer {
  const out = Buffer.alloc(size);
  let block = createHash('sha256').update(seed).digest();
  for (let i = 0; i < size; i += block.length) {
    block.copy(out, i);
    block = createHash('sha256').update(block).digest();
  }
  return out;
}

interface Creator {
  username: string;
  password: string;
  userid: string;
  tokenContent: string;
}

interface MyContent {
  Uploads: (UploadDataDto & { OriginalName: string })[];
  Avatars: AvatarMetaDto[];
  Worlds: WorldMetaDto[];
}

/**
 * A host listening on every interface, opened in the browser on 127.0.0.1 as its own desktop window is: the
 * image URLs the UI stores must name its LAN address, which other machines can load.
 */
describe('edit details of avatars and worlds in a real browser', { timeout: 60_000 }, () => {
  let server: HostServer;
  let dataDir: string;
  let lanOrigin: string;
  let browser: Browser;
  let tab: Tab | undefined;
  let count = 0;

  beforeAll(async () => {
    requireBuiltUi();
    dataDir = await mkdtemp(join(tmpdir(), 'hypernex-e2e-details-'));
    server = await createServer({
      dataDir,
      host: '0.0.0.0',
      port: 0,
      uiDir: UI_DIR,
      passwordHash: { memoryCost: 1024, timeCost: 1, concurrency: 2 },
    });
    await server.setup.setupOwner({ setupSecret: server.setupSecret!, ...OWNER });
    const lan = server.lanUrls[0];
    if (!lan) throw new Error('this machine has no LAN (non-loopback IPv4) address to test with');
    lanOrigin = lan;
    browser = await launchBrowser();
  });

  afterEach(async () => {
    await tab?.close();
    tab = undefined;
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  async function makeCreator(): Promise<Creator> {
    count++;
    const username = `Maker${count}`;
    const password = 'Maker#Pass1';
    const { user, token } = await server.accounts.createUser({
      username,
      password,
      email: `maker${count}@example.test`,
    });
    return { username, password, userid: user.Id, tokenContent: token.content };
  }

  async function contentOf(creator: Creator): Promise<MyContent> {
    const response = await fetch(`${server.url}/api/v1/getMyContent`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ userid: creator.userid, tokenContent: creator.tokenContent }),
    });
    const envelope = (await response.json()) as { success: boolean; message: string; result: MyContent };
    if (!envelope.success) throw new Error(envelope.message);
    return envelope.result;
  }

  /** Puts a file (and an avatar or world) on the host through the 1.4 upload, as a game client does. */
  async function seed(
    creator: Creator,
    name: string,
    data: Buffer,
    meta?: { field: 'avatarMeta' | 'worldMeta'; value: object },
  ): Promise<{ UploadData: UploadDataDto; AvatarId?: string; WorldId?: string }> {
    const form = new FormData();
    form.append('userid', creator.userid);
    form.append('tokenContent', creator.tokenContent);
    if (meta) form.append(meta.field, JSON.stringify(meta.value));
    form.append('file', new Blob([new Uint8Array(data)]), name);
    const response = await fetch(`${server.url}/api/v1/upload`, { method: 'POST', body: form });
    const envelope = (await response.json()) as {
      success: boolean;
      message: string;
      result: { UploadData: UploadDataDto; AvatarId?: string; WorldId?: string };
    };
    if (!envelope.success) throw new Error(envelope.message);
    return envelope.result;
  }

  async function filesOnDisk(creator: Creator): Promise<string[]> {
    return (await readdir(join(dataDir, 'files', creator.userid)).catch(() => [])).sort();
  }

  /** Signs in on the loopback address and opens Uploads. imgur answers with a real PNG, not the Internet. */
  async function openUploads(creator: Creator): Promise<Page> {
    tab = await openTab(browser);
    const { page } = tab;
    page.setDefaultTimeout(8000);
    const image = (route: Route) => route.fulfill({ status: 200, contentType: 'image/png', body: TEAL });
    await page.route('https://i.imgur.com/**', image);
    await page.goto(`${server.url}/`);
    expect(new URL(page.url()).hostname).toBe('127.0.0.1');
    await signIn(page, creator.username, creator.password);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Uploads' }).click();
    await page.getByRole('heading', { name: 'Uploads', level: 1 }).waitFor();
    return page;
  }

  const fileAt = (origin: string, creator: Creator, fileId: string) =>
    `${origin}/api/v1/file/${creator.userid}/${fileId}`;

  async function loadedWidth(page: Page, selector: ReturnType<Page['locator']>): Promise<number> {
    return selector.evaluate((img: HTMLImageElement) => img.naturalWidth);
  }

  it("makes an image dropped with a build its image (at the host's LAN address), then edits the avatar's details without a new build", async () => {
    const creator = await makeCreator();
    const page = await openUploads(creator);

    // One batch: a build and an image. The image goes up first and becomes the avatar's image.
    const [chooser] = await Promise.all([
      page.waitForEvent('filechooser'),
      page.getByRole('button', { name: 'Choose files' }).click(),
    ]);
    await chooser.setFiles([
      { name: 'robot.hna', mimeType: 'application/octet-stream', buffer: bytes(20_000, 'robot') },
      { name: 'face.png', mimeType: 'image/png', buffer: VIOLET },
    ]);
    const form = page.getByRole('form', { name: 'Details of robot.hna' });
    const useFace = form
      .getByTestId('batch-images')
      .getByRole('button', { name: 'Use “face.png” as the image' });
    expect(await useFace.getAttribute('aria-pressed')).toBe('true');
    await page
      .getByTestId('upload-job')
      .filter({ hasText: 'face.png' })
      .getByTestId('job-state')
      .filter({ hasText: 'Uploaded' })
      .waitFor({ timeout: 15_000 });
    const face = (await contentOf(creator)).Uploads.find((u) => u.OriginalName === 'face.png')!;
    const faceUrl = fileAt(lanOrigin, creator, face.FileId);
    expect(new URL(faceUrl).hostname).not.toBe('127.0.0.1');
    await expect.poll(() => form.getByLabel('Image URL').inputValue()).toBe(faceUrl);
    // The preview loads it from the LAN address, as another machine would.
    await expect.poll(() => loadedWidth(page, form.getByTestId('image-preview').locator('img'))).toBe(48);
    await form.getByLabel('Name', { exact: true }).fill('Robot');
    await form.getByLabel('Tags').fill('robot');
    await form.screenshot({ path: '/tmp/edit-details-batch.png' });
    await form.getByRole('button', { name: 'Upload avatar' }).click();
    await page
      .getByTestId('upload-job')
      .filter({ hasText: 'robot.hna' })
      .getByTestId('job-state')
      .filter({ hasText: 'Uploaded' })
      .waitFor({ timeout: 15_000 });

    const before = await contentOf(creator);
    const stored = before.Avatars[0]!;
    expect(stored).toMatchObject({ Name: 'Robot', Tags: ['robot'], ImageURL: faceUrl });
    const disk = await filesOnDisk(creator);
    expect(disk).toHaveLength(2);

    // Edit details: the form opens under the row with the cursor in its first field.
    const row = page.getByTestId('avatar-matrix').getByTestId('asset-row').filter({ hasText: 'Robot' });
    const edit = row.getByRole('button', { name: 'Edit details of Robot' });
    await edit.click();
    expect(await edit.getAttribute('aria-expanded')).toBe('true');
    const editor = page.getByRole('form', { name: 'Edit the details of “Robot”' });
    const name = editor.getByLabel('Name', { exact: true });
    await expect.poll(() => name.evaluate((el) => el === document.activeElement)).toBe(true);
    expect(await name.inputValue()).toBe('Robot');
    expect(await editor.getByLabel('Image URL').inputValue()).toBe(faceUrl);

    // The shared rules are checked before sending, on the field.
    await name.fill('R'.repeat(51));
    await editor.getByRole('button', { name: 'Save details' }).click();
    await editor.getByText('Name must be at most 50 characters').waitFor();
    await expect.poll(() => name.evaluate((el) => el === document.activeElement)).toBe(true);

    await name.fill('Robot Mk II');
    await editor.getByLabel('Description').fill('Now with a new face.');
    await editor.getByLabel('Tags').fill('robot, shiny');
    await editor.getByRole('radio', { name: 'Only me' }).check();
    await editor.getByLabel('Image URL').fill('https://i.imgur.com/robot.png');
    await expect.poll(() => loadedWidth(page, editor.getByTestId('image-preview').locator('img'))).toBe(48);
    const changes = await editor.getByTestId('details-changes').locator('.diff-row').allTextContents();
    expect(changes).toEqual([
      'NameNow: Robot→After saving: Robot Mk II',
      'DescriptionNow: (empty)→After saving: Now with a new face.',
      'TagsNow: robot→After saving: robot, shiny',
      'Who can use itNow: Anyone→After saving: Only me',
      `Image URLNow: ${faceUrl}→After saving: https://i.imgur.com/robot.png`,
    ]);
    await editor.screenshot({ path: '/tmp/edit-details-avatar.png' });
    await editor.getByRole('button', { name: 'Save details' }).click();

    // The list shows the new name and focus is back on the button that opened the form.
    const renamed = page
      .getByTestId('avatar-matrix')
      .getByTestId('asset-row')
      .filter({ hasText: 'Robot Mk II' });
    await renamed.waitFor();
    await editor.waitFor({ state: 'detached' });
    const editAgain = renamed.getByRole('button', { name: /^Edit details of Robot/ });
    await expect.poll(() => editAgain.evaluate((el) => el === document.activeElement)).toBe(true);
    await page.getByText('Saved the details of the avatar “Robot Mk II”.').waitFor();

    // The host stored the details, kept the build and received no new file.
    const after = await contentOf(creator);
    expect(after.Avatars).toHaveLength(1);
    expect(after.Avatars[0]).toMatchObject({
      Id: stored.Id,
      Name: 'Robot Mk II',
      Description: 'Now with a new face.',
      Tags: ['robot', 'shiny'],
      Publicity: 1,
      ImageURL: 'https://i.imgur.com/robot.png',
      Builds: stored.Builds,
    });
    expect(after.Uploads.map((u) => u.FileId).sort()).toEqual(before.Uploads.map((u) => u.FileId).sort());
    expect(await filesOnDisk(creator)).toEqual(disk);
    expectNoProblems(tab!);
  });

  it("shows the host's refusal next to the field when the form could not know the rule", async () => {
    const creator = await makeCreator();
    const seeded = await seed(creator, 'bot.hna', bytes(5000, 'bot'), {
      field: 'avatarMeta',
      value: { Publicity: 0, Name: 'Bot', Description: '', Tags: [], ImageURL: '', BuildPlatform: 0 },
    });
    tab = await openTab(browser);
    const { page } = tab;
    page.setDefaultTimeout(8000);
    // Without the host's published rules the form cannot check image domains: the host does.
    await page.route('**/api/v1/uploadRules', (route) => route.abort());
    await page.goto(`${server.url}/`);
    await signIn(page, creator.username, creator.password);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Uploads' }).click();
    const row = page.getByTestId('avatar-matrix').getByTestId('asset-row').filter({ hasText: 'Bot' });
    await row.getByRole('button', { name: 'Edit details of Bot' }).click();
    const editor = page.getByRole('form', { name: 'Edit the details of “Bot”' });
    // Routed before the address is typed: the form's preview may ask for it at once (this machine has no DNS).
    await page.route('https://images.example.com/**', (route) =>
      route.fulfill({ status: 200, contentType: 'image/png', body: TEAL }),
    );
    await editor.getByLabel('Image URL').fill('https://images.example.com/bot.png');
    // The form fits a phone's width like the rest of the page.
    await page.setViewportSize({ width: 360, height: 760 });
    expect(await fitsViewport(page)).toBe(true);
    await editor.getByRole('button', { name: 'Save details' }).click();
    await editor
      .getByText('Image URL must be empty, on this host or on an allowed image domain (i.imgur.com)')
      .waitFor();
    expect(await editor.getByLabel('Image URL').getAttribute('aria-invalid')).toBe('true');
    expect((await contentOf(creator)).Avatars[0]).toMatchObject({ Id: seeded.AvatarId, ImageURL: '' });

    // Escape closes the form unsaved and gives focus back to its button.
    await editor.getByLabel('Image URL').press('Escape');
    await editor.waitFor({ state: 'detached' });
    const edit = row.getByRole('button', { name: 'Edit details of Bot' });
    await expect.poll(() => edit.evaluate((el) => el === document.activeElement)).toBe(true);
    // The aborted uploadRules request is the only console error, and it is ours.
    expect(tab.problems.filter((p) => !p.includes('net::ERR_FAILED'))).toEqual([]);
  });

  it("changes a world's thumbnail and icons to images on this host without a new build, keeping its server script", async () => {
    const creator = await makeCreator();
    const banner = await seed(creator, 'banner.png', VIOLET);
    const script = await seed(creator, 'game.lua', Buffer.from('print("hi")'));
    const scriptUrl = fileAt(server.url, creator, script.UploadData.FileId);
    const seeded = await seed(creator, 'arena.hnw', bytes(8000, 'arena'), {
      field: 'worldMeta',
      value: {
        Publicity: 0,
        Name: 'Arena',
        Description: 'Round',
        Tags: ['pvp'],
        ThumbnailURL: '',
        IconURLs: [],
        ServerScripts: [scriptUrl],
        BuildPlatform: 0,
      },
    });
    const before = await contentOf(creator);
    const disk = await filesOnDisk(creator);
    const page = await openUploads(creator);

    const row = page.getByTestId('world-matrix').getByTestId('asset-row').filter({ hasText: 'Arena' });
    await row.getByRole('button', { name: 'Edit details of Arena' }).click();
    const editor = page.getByRole('form', { name: 'Edit the details of “Arena”' });
    // Your images are suggested at the address other machines can load.
    const bannerUrl = fileAt(lanOrigin, creator, banner.UploadData.FileId);
    const suggested = await editor
      .locator('datalist option')
      .evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value));
    expect(suggested).toContain(bannerUrl);
    await editor.getByLabel('Thumbnail URL').fill(bannerUrl);
    await editor.getByRole('button', { name: 'Add an icon' }).click();
    await editor.getByLabel('Icon 1 URL').fill(bannerUrl);
    await editor.getByRole('button', { name: 'Add an icon' }).click();
    await editor.getByLabel('Icon 2 URL').fill('https://i.imgur.com/icon.png');
    await expect
      .poll(() =>
        editor
          .getByTestId('image-preview')
          .locator('img')
          .evaluateAll((imgs) => imgs.map((img) => (img as HTMLImageElement).naturalWidth)),
      )
      .toEqual([48, 48, 48]);
    expect(await editor.getByTestId('details-changes').locator('.diff-row').allTextContents()).toEqual([
      `Thumbnail URLNow: (empty)→After saving: ${bannerUrl}`,
      'IconsNow: none→After saving: 2 icons',
    ]);
    expect(await seriousViolations(page)).toEqual([]);
    // Tall enough for the whole form at the top of the page: the sticky top bar covers nothing of it.
    await page.setViewportSize({ width: 1280, height: 2100 });
    await page.evaluate(() => window.scrollTo(0, 0));
    await editor.screenshot({ path: '/tmp/edit-details.png' });
    await page.screenshot({ path: '/tmp/edit-details-page.png', fullPage: true });
    await editor.getByRole('button', { name: 'Save details' }).click();
    await editor.waitFor({ state: 'detached' });
    await page.getByText('Saved the details of the world “Arena”.').waitFor();
    await expect
      .poll(() =>
        row
          .getByTestId('image-preview')
          .locator('img')
          .evaluate((img: HTMLImageElement) => img.src),
      )
      .toBe(bannerUrl);

    const after = await contentOf(creator);
    expect(after.Worlds).toHaveLength(1);
    expect(after.Worlds[0]).toMatchObject({
      Id: seeded.WorldId,
      Name: 'Arena',
      Description: 'Round',
      Tags: ['pvp'],
      Publicity: 0,
      ThumbnailURL: bannerUrl,
      IconURLs: [bannerUrl, 'https://i.imgur.com/icon.png'],
    });
    // Same build, same server script; no file came or went.
    expect(after.Worlds[0]!.Builds).toEqual(before.Worlds[0]!.Builds);
    expect(after.Worlds[0]!.Builds[0]!.ServerScripts).toEqual([scriptUrl]);
    expect(after.Uploads.map((u) => u.FileId).sort()).toEqual(before.Uploads.map((u) => u.FileId).sort());
    expect(await filesOnDisk(creator)).toEqual(disk);
    expectNoProblems(tab!);
  });
});
