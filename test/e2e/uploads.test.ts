import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { crc32, deflateSync } from 'node:zlib';
import { join } from 'node:path';
import type { Browser, Page, Route } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createServer, type HostServer } from '../../server/host.js';
import type { AvatarMetaDto, UploadDataDto, WorldMetaDto } from '../../server/protocol/uploads.js';
import {
  chooseTheme,
  expectNoProblems,
  fitsViewport,
  launchBrowser,
  openTab,
  OWNER,
  requireBuiltUi,
  seriousViolations,
  signIn,
  startHostWithOwner,
  UI_DIR,
  type Host,
  type Tab,
} from './harness.js';

/** A real PNG of one colour, so previews load (and show) for real. */
function png(width: number, height: number, [r, g, b]: [number, number, number]): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc32(body), 8 + data.length);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(width * 3, Buffer.from([r, g, b]))]);
  const pixels = deflateSync(Buffer.concat(Array.from({ length: height }, () => row)));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', pixels),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

const PNG = png(64, 64, [123, 108, 255]);
const TEAL_PNG = png(64, 64, [63, 208, 201]);

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

/** Bytes that differ per name, so hashes prove which file landed where. */
function bytes(size: number, seed: string): Buffer {
  const out = Buffer.alloc(size);
  let block = createHash('sha256').update(seed).digest();
  for (let i = 0; i < size; i += block.length) {
    block.copy(out, i);
    block = createHash('sha256').update(block).digest();
  }
  return out;
}

function md5(buffer: Buffer): string {
  return createHash('md5').update(buffer).digest('hex');
}

describe('uploads in a real browser', { timeout: 60_000 }, () => {
  let host: Host;
  let browser: Browser;
  let tab: Tab | undefined;
  let userCount = 0;

  beforeAll(async () => {
    host = await startHostWithOwner();
    browser = await launchBrowser();
  });

  afterEach(async () => {
    await tab?.close();
    tab = undefined;
  });

  afterAll(async () => {
    await browser?.close();
    await host?.stop();
  });

  /** A fresh creator per test, so each test sees only its own content. */
  async function makeCreator(): Promise<Creator> {
    userCount++;
    const username = `Creator${userCount}`;
    const password = 'Creator#Pass1';
    const { user, token } = await host.server.accounts.createUser({
      username,
      password,
      email: `creator${userCount}@example.test`,
    });
    return { username, password, userid: user.Id, tokenContent: token.content };
  }

  async function api<R>(path: string, body: object): Promise<R> {
    const response = await fetch(`${host.server.url}/api/v1/${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    const envelope = (await response.json()) as { success: boolean; message: string; result: R };
    if (!envelope.success) throw new Error(`${path}: ${envelope.message}`);
    return envelope.result;
  }

  const contentOf = (creator: Creator) =>
    api<MyContent>('getMyContent', { userid: creator.userid, tokenContent: creator.tokenContent });

  async function filesOnDisk(creator: Creator): Promise<string[]> {
    return readdir(join(host.server.config.dataDir, 'files', creator.userid)).catch(() => []);
  }

  /** Puts content on the host straight through the API, for tests about what the screen does with it. */
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
    const response = await fetch(`${host.server.url}/api/v1/upload`, { method: 'POST', body: form });
    const envelope = (await response.json()) as {
      success: boolean;
      message: string;
      result: { UploadData: UploadDataDto; AvatarId?: string; WorldId?: string };
    };
    if (!envelope.success) throw new Error(envelope.message);
    return envelope.result;
  }

  async function openUploads(page: Page, creator: Creator): Promise<void> {
    await page.goto(host.server.url);
    await signIn(page, creator.username, creator.password);
    await openSection(page);
  }

  async function openSection(page: Page): Promise<void> {
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Uploads' }).click();
    await page.getByRole('heading', { name: 'Uploads', level: 1 }).waitFor();
  }

  /** Clicks a button that opens the file chooser and picks in-memory files. */
  async function chooseFiles(
    page: Page,
    buttonName: string | RegExp,
    files: { name: string; buffer: Buffer }[],
  ): Promise<void> {
    const [chooser] = await Promise.all([
      page.waitForEvent('filechooser'),
      page.getByRole('button', { name: buttonName }).click(),
    ]);
    await chooser.setFiles(files.map((f) => ({ mimeType: 'application/octet-stream', ...f })));
  }

  /** The same with files on disk, whose last-modified time the browser reads from the file system. */
  async function choosePaths(page: Page, buttonName: string | RegExp, paths: string[]): Promise<void> {
    const [chooser] = await Promise.all([
      page.waitForEvent('filechooser'),
      page.getByRole('button', { name: buttonName }).click(),
    ]);
    await chooser.setFiles(paths);
  }

  function job(page: Page, fileName: string) {
    return page.getByTestId('upload-job').filter({ hasText: fileName });
  }

  async function waitForState(page: Page, fileName: string, state: string): Promise<void> {
    await job(page, fileName)
      .getByTestId('job-state')
      .filter({ hasText: state })
      .waitFor({ timeout: 15_000 });
  }

  /** Image hosts outside this machine answer with a real PNG, so previews neither fail nor reach the Internet. */
  async function fakeImageSites(page: Page): Promise<void> {
    const image = (route: Route) => route.fulfill({ status: 200, contentType: 'image/png', body: TEAL_PNG });
    await page.route('https://i.imgur.com/**', image);
    await page.route('https://images.example.com/**', image);
  }

  it('uploads an avatar with details, adds its Android build, then overwrites that build showing what changes', async () => {
    const creator = await makeCreator();
    tab = await openTab(browser);
    const { page } = tab;
    await fakeImageSites(page);
    await openUploads(page, creator);
    await page.screenshot({ path: '/tmp/ui-uploads-empty.png', fullPage: true });

    const windowsBuild = bytes(40_000, 'robot-windows');
    await chooseFiles(page, 'Choose files', [{ name: 'robot.hna', buffer: windowsBuild }]);
    const form = page.getByRole('form', { name: 'Details of robot.hna' });
    await form.getByLabel('Name', { exact: true }).fill('Robot');
    await form.getByLabel('Tags').fill('robot, metal');
    await form.getByLabel('Description').fill('A friendly robot.');
    await form.getByLabel('Image URL').fill('https://i.imgur.com/robot.png');
    await expect
      .poll(() =>
        form
          .getByTestId('image-preview')
          .locator('img')
          .evaluate((img: HTMLImageElement) => img.naturalWidth),
      )
      .toBe(64);
    await page.screenshot({ path: '/tmp/ui-uploads-avatar-form.png', fullPage: true });
    await form.getByRole('button', { name: 'Upload avatar' }).click();
    await waitForState(page, 'robot.hna', 'Uploaded');

    let content = await contentOf(creator);
    expect(content.Avatars).toHaveLength(1);
    const avatar = content.Avatars[0]!;
    expect(avatar).toMatchObject({
      Name: 'Robot',
      Description: 'A friendly robot.',
      Tags: ['robot', 'metal'],
      Publicity: 0,
      ImageURL: 'https://i.imgur.com/robot.png',
    });
    const windowsFile = content.Uploads.find((u) => u.OriginalName === 'robot.hna')!;
    expect(windowsFile.Hash).toBe(md5(windowsBuild));
    expect(avatar.Builds).toEqual([{ FileId: windowsFile.FileId, BuildPlatform: 0 }]);

    // The matrix shows the Windows build and offers the missing Android one.
    const row = page.getByTestId('avatar-matrix').getByTestId('asset-row').filter({ hasText: 'Robot' });
    await row.getByTestId('build-Windows').filter({ hasText: 'Present' }).waitFor();
    await row.getByRole('button', { name: 'Upload the Android build of Robot' }).click();
    await page.getByText('Updating the avatar “Robot”: choose its Android build').waitFor();

    const androidBuild = bytes(30_000, 'robot-android-1');
    await chooseFiles(page, 'Choose files', [{ name: 'robot-android.hna', buffer: androidBuild }]);
    const addForm = page.getByRole('form', { name: 'Details of robot-android.hna' });
    expect(await addForm.getByLabel('Name', { exact: true }).inputValue()).toBe('Robot');
    expect(await addForm.getByRole('radio', { name: /Android/ }).isChecked()).toBe(true);
    await addForm.getByTestId('change-summary').getByText('Android build: added').waitFor();
    await addForm.getByTestId('change-summary').getByText('The details stay as they are.').waitFor();
    await addForm.getByRole('button', { name: 'Upload Android build' }).click();
    await waitForState(page, 'robot-android.hna', 'Uploaded');

    content = await contentOf(creator);
    const firstAndroid = content.Uploads.find((u) => u.OriginalName === 'robot-android.hna')!;
    expect(content.Avatars[0]!.Builds).toEqual([
      { FileId: windowsFile.FileId, BuildPlatform: 0 },
      { FileId: firstAndroid.FileId, BuildPlatform: 1 },
    ]);
    await row.getByTestId('build-Android').filter({ hasText: 'Present' }).waitFor();

    // Overwrite the Android build with new details: the form says what is replaced before sending.
    await row.getByRole('button', { name: 'Update Robot' }).click();
    const newerAndroid = bytes(35_000, 'robot-android-2');
    await chooseFiles(page, /Choose files|Choose another file/, [
      { name: 'robot-android-v2.hna', buffer: newerAndroid },
    ]);
    const overwrite = page.getByRole('form', { name: 'Details of robot-android-v2.hna' });
    await overwrite.getByRole('radio', { name: /Android/ }).check();
    await overwrite.getByLabel('Name', { exact: true }).fill('Robot Mk II');
    await overwrite.getByLabel('Tags').fill('robot, metal, shiny');
    await overwrite.getByRole('radio', { name: 'Only me' }).check();
    const summary = overwrite.getByTestId('change-summary');
    await summary.getByText('Android build:').waitFor();
    expect(await summary.textContent()).toContain(
      `The current build (${firstAndroid.FileId}) is deleted from the host`,
    );
    expect(await summary.textContent()).toContain('The Windows build stays as it is.');
    const diff = await summary.locator('.diff-row').allTextContents();
    expect(diff).toEqual([
      'NameNow: Robot→After the upload: Robot Mk II',
      'TagsNow: robot, metal→After the upload: robot, metal, shiny',
      'Who can use itNow: Anyone→After the upload: Only me',
    ]);
    await summary.scrollIntoViewIfNeeded();
    await page.screenshot({ path: '/tmp/ui-uploads-overwrite-diff.png', fullPage: true });
    await overwrite.getByRole('button', { name: 'Upload Android build' }).click();
    await waitForState(page, 'robot-android-v2.hna', 'Uploaded');

    content = await contentOf(creator);
    const secondAndroid = content.Uploads.find((u) => u.OriginalName === 'robot-android-v2.hna')!;
    expect(secondAndroid.Hash).toBe(md5(newerAndroid));
    // OwnerOnly now: the whole meta (with builds) is for the owner.
    const { Meta } = await (
      await fetch(`${host.server.url}/api/v1/meta/avatar/${avatar.Id}`, {
        headers: { 'x-hypernex-userid': creator.userid, 'x-hypernex-token': creator.tokenContent },
      })
    )
      .json()
      .then((e: { result: { Meta: AvatarMetaDto } }) => e.result);
    expect(Meta.Builds).toEqual([
      { FileId: windowsFile.FileId, BuildPlatform: 0 },
      { FileId: secondAndroid.FileId, BuildPlatform: 1 },
    ]);
    expect(Meta).toMatchObject({ Name: 'Robot Mk II', Tags: ['robot', 'metal', 'shiny'], Publicity: 1 });
    // The replaced Android build is gone, record and bytes.
    expect(content.Uploads.map((u) => u.FileId)).not.toContain(firstAndroid.FileId);
    const onDisk = await filesOnDisk(creator);
    expect(onDisk.some((name) => name.startsWith(firstAndroid.FileId))).toBe(false);
    expect(onDisk).toHaveLength(2);
    await page.getByTestId('avatar-matrix').getByText('Robot Mk II').waitFor();
    await page.screenshot({ path: '/tmp/ui-uploads-done.png', fullPage: true });
    expectNoProblems(tab);
  });

  it("refuses a too-long name and an image site the host does not allow before sending, naming the host's sites", async () => {
    const creator = await makeCreator();
    tab = await openTab(browser);
    const { page } = tab;
    await fakeImageSites(page);
    const sent: string[] = [];
    page.on('request', (request) => {
      if (/\/api\/v1\/upload(Part)?$/.test(request.url())) sent.push(request.url());
    });
    await openUploads(page, creator);

    await chooseFiles(page, 'Choose files', [{ name: 'knight.hna', buffer: bytes(20_000, 'knight') }]);
    const form = page.getByRole('form', { name: 'Details of knight.hna' });
    const name = form.getByLabel('Name', { exact: true });
    await name.fill('K'.repeat(51));
    const image = form.getByLabel('Image URL');
    await image.fill('https://images.example.com/knight.png');
    // The host's published rules are in the hint before anything is sent.
    await form.getByText(/or on the allowed image site i\.imgur\.com\./).waitFor();
    await form.getByRole('button', { name: 'Upload avatar' }).click();
    await form.getByText('Name must be at most 50 characters').waitFor();
    // Every rule the host would apply, at once and before a byte goes.
    await form
      .getByText('Image URL must be empty, on this host or on an allowed image domain (i.imgur.com)')
      .waitFor();
    expect(await name.getAttribute('aria-invalid')).toBe('true');
    expect(await image.getAttribute('aria-invalid')).toBe('true');
    await expect.poll(() => name.evaluate((el) => el === document.activeElement)).toBe(true);
    await page.screenshot({ path: '/tmp/ui-uploads-name-too-long.png' });

    // Fixing them clears the messages as they type; then the file goes, once.
    await name.fill('Knight');
    await image.fill('https://i.imgur.com/knight.png');
    expect(await form.getByText('Name must be at most 50 characters').count()).toBe(0);
    expect(await form.getByText(/allowed image domain/).count()).toBe(0);
    expect(sent).toEqual([]);
    await form.getByRole('button', { name: 'Upload avatar' }).click();
    await waitForState(page, 'knight.hna', 'Uploaded');
    expect(sent).toHaveLength(1);
    expect((await contentOf(creator)).Avatars[0]).toMatchObject({
      Name: 'Knight',
      ImageURL: 'https://i.imgur.com/knight.png',
    });
    expectNoProblems(tab);
  });

  it('offers Edit details, not Retry, when the host refuses details the form could not know', async () => {
    const creator = await makeCreator();
    tab = await openTab(browser);
    const { page } = tab;
    await fakeImageSites(page);
    // Rules read before the host's list changed: the form lets images.example.com through, the host does not.
    await page.route('**/api/v1/uploadRules', async (route) => {
      const response = await route.fetch();
      const envelope = (await response.json()) as { result: { allowedImageDomains: string[] } };
      envelope.result.allowedImageDomains.push('images.example.com');
      await route.fulfill({ response, json: envelope });
    });
    await openUploads(page, creator);
    await chooseFiles(page, 'Choose files', [{ name: 'squire.hna', buffer: bytes(20_000, 'squire') }]);
    const form = page.getByRole('form', { name: 'Details of squire.hna' });
    await form.getByLabel('Name', { exact: true }).fill('Squire');
    await form.getByLabel('Image URL').fill('https://images.example.com/squire.png');
    await form.getByRole('button', { name: 'Upload avatar' }).click();
    await waitForState(page, 'squire.hna', 'Failed');
    const row = job(page, 'squire.hna');
    await row.getByRole('button', { name: 'Edit the details of squire.hna' }).waitFor();
    expect(await row.getByRole('button', { name: /Retry/ }).count()).toBe(0);
    expect(await row.getByTestId('job-status').textContent()).toBe('Refused by the host, nothing was kept');
    // The form is open again with the host's reason on the field and what was typed.
    const reopened = page.getByRole('form', { name: 'Details of squire.hna' });
    await reopened
      .getByText('Image URL must be empty, on this host or on an allowed image domain (i.imgur.com)')
      .waitFor();
    expect(await reopened.getByLabel('Name', { exact: true }).inputValue()).toBe('Squire');
    await page.screenshot({ path: '/tmp/ui18-uploads-edit-details.png', fullPage: true });
    expect((await contentOf(creator)).Uploads).toEqual([]);
    expect(await filesOnDisk(creator)).toEqual([]);
    await reopened.getByRole('button', { name: 'Discard' }).click();
    await row.getByRole('button', { name: 'Edit the details of squire.hna' }).click();
    await reopened.getByLabel('Image URL').fill('https://i.imgur.com/squire.png');
    await reopened.getByRole('button', { name: 'Upload avatar' }).click();
    await waitForState(page, 'squire.hna', 'Uploaded');
    expectNoProblems(tab);
  });

  it('keeps avatar names readable at 800 px, and Update replaces the build the avatar has', async () => {
    const creator = await makeCreator();
    await seed(creator, 'lantern.hna', bytes(10_000, 'lantern'), {
      field: 'avatarMeta',
      value: {
        Name: 'Lantern Keeper of the Old Mill',
        Description: '',
        Publicity: 0,
        BuildPlatform: 0,
        Tags: [],
        ImageURL: '',
      },
    });
    tab = await openTab(browser, { viewport: { width: 800, height: 900 } });
    const { page } = tab;
    await fakeImageSites(page);
    await openUploads(page, creator);
    const row = page.getByTestId('avatar-matrix').getByTestId('asset-row');
    const name = row.locator('.asset-name');
    await name.waitFor();
    const box = await name.boundingBox();
    expect(box!.width).toBeGreaterThan(200);
    expect(await name.evaluate((el) => el.scrollWidth <= el.clientWidth + 1)).toBe(true);
    expect(await fitsViewport(page)).toBe(true);
    await page.screenshot({ path: '/tmp/ui18-uploads-800.png', fullPage: true });

    await row.getByRole('button', { name: 'Update Lantern Keeper of the Old Mill' }).click();
    await chooseFiles(page, /Choose files|Choose another file/, [
      { name: 'lantern-2.hna', buffer: bytes(11_000, 'lantern-2') },
    ]);
    const form = page.getByRole('form', { name: 'Details of lantern-2.hna' });
    expect(await form.getByRole('radio', { name: /Windows/ }).isChecked()).toBe(true);
    await form.getByText('Replaces its Windows build; the old one is deleted.').waitFor();
    await form.getByRole('radio', { name: /Android/ }).check();
    await form.getByText('Adds an Android build. The Windows build stays.').waitFor();
    for (const theme of ['dark', 'light'] as const) {
      await chooseTheme(page, theme);
      await page.screenshot({ path: `/tmp/ui18-upload-form-${theme}.png`, fullPage: true });
      expect(await seriousViolations(page), theme).toEqual([]);
    }
    expectNoProblems(tab);
  });

  it('cancels an upload midway and the host keeps nothing of it', async () => {
    const creator = await makeCreator();
    tab = await openTab(browser);
    const { page } = tab;
    await openUploads(page, creator);
    // A slow uplink (Chromium's own throttling) keeps the upload running long enough to cancel it for real.
    const cdp = await tab.context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: 128 * 1024,
    });

    await chooseFiles(page, 'Choose files', [{ name: 'clip.mp4', buffer: bytes(3_000_000, 'clip') }]);
    await waitForState(page, 'clip.mp4', 'Uploading');
    const status = job(page, 'clip.mp4').getByTestId('job-status');
    await expect.poll(() => status.textContent(), { timeout: 10_000 }).toMatch(/kB\/s · about \d+ s left/);
    expect(await status.textContent()).toMatch(/^[\d.]+ (kB|MB) of 3\.0 MB \(\d+%\)/);
    await page.screenshot({ path: '/tmp/ui-uploads-progress.png' });
    await job(page, 'clip.mp4').getByRole('button', { name: 'Cancel upload of clip.mp4' }).click();
    await waitForState(page, 'clip.mp4', 'Cancelled');
    await job(page, 'clip.mp4').getByText('Cancelled. Nothing was kept on the host.').waitFor();
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: -1,
    });

    // The host dropped the partial body: no record, no file, no temp file left.
    const tmp = join(host.server.config.dataDir, 'tmp');
    await expect.poll(async () => (await readdir(tmp)).length, { timeout: 5000 }).toBe(0);
    // On failure the message carries what the row said, to tell a late cancel from a kept partial file.
    const row = await job(page, 'clip.mp4').innerText();
    expect((await contentOf(creator)).Uploads, row).toEqual([]);
    expect(await filesOnDisk(creator)).toEqual([]);

    // Upload again sends it whole.
    await job(page, 'clip.mp4').getByRole('button', { name: 'Retry upload of clip.mp4' }).click();
    await waitForState(page, 'clip.mp4', 'Uploaded');
    expect((await contentOf(creator)).Uploads.map((u) => u.OriginalName)).toEqual(['clip.mp4']);
    expectNoProblems(tab);
  });

  it('resumes a chunked upload after a reload, sending only the parts the host lacks', async () => {
    const creator = await makeCreator();
    tab = await openTab(browser);
    const { page } = tab;
    page.on('dialog', (dialog) => void dialog.accept());
    await page.goto(host.server.url);
    // Small parts so a small file goes in six of them (documented in upload-settings.ts).
    await page.evaluate(() => {
      localStorage.setItem('hnx.chunkThreshold', String(64 * 1024));
      localStorage.setItem('hnx.chunkSize', String(64 * 1024));
    });
    await signIn(page, creator.username, creator.password);
    await openSection(page);

    // Which parts reach the host's uploads service, whatever the browser says it sent.
    const storedParts: string[] = [];
    const chunk = host.server.uploads.chunk;
    host.server.uploads.chunk = (user, temp, input) => {
      storedParts.push(String(input.chunkNumber));
      return chunk(user, temp, input);
    };
    onTestFinished(() => {
      host.server.uploads.chunk = chunk;
    });
    const world = bytes(5 * 64 * 1024 + 1000, 'island');
    // A real file on disk: picking it again gives the same name, size and last-modified time, as for a person.
    const dir = await mkdtemp(join(tmpdir(), 'hypernex-resume-'));
    await mkdir(join(dir, 'other'));
    const file = join(dir, 'island.hnw');
    const lookalike = join(dir, 'other', 'island.hnw');
    await writeFile(file, world);
    await writeFile(lookalike, world);
    await utimes(file, new Date(1_700_000_000_000), new Date(1_700_000_000_000));
    let parts = 0;
    let held: Route | null = null;
    let holding!: () => void;
    const third = new Promise<void>((resolve) => (holding = resolve));
    await page.route('**/api/v1/uploadPart', async (route) => {
      parts++;
      if (parts <= 2) return route.continue();
      // The third part never arrives: the window is reloaded while it is on its way.
      held = route;
      holding();
    });

    await choosePaths(page, 'Choose files', [file]);
    const form = page.getByRole('form', { name: 'Details of island.hnw' });
    await form.getByLabel('Name', { exact: true }).fill('Island');
    await form.getByRole('button', { name: 'Upload world' }).click();
    await third;
    await job(page, 'island.hnw').getByTestId('job-status').filter({ hasText: 'part 3 of 6' }).waitFor();
    await page.screenshot({ path: '/tmp/ui-uploads-chunked.png' });

    await page.reload();
    await (held as Route | null)?.abort().catch(() => undefined);
    await page.unroute('**/api/v1/uploadPart');
    await openSection(page);
    const interrupted = page.getByTestId('interrupted-upload').filter({ hasText: 'island.hnw' });
    await interrupted.getByText(/The host has 2 of 6 parts/).waitFor();
    await page.screenshot({ path: '/tmp/ui-uploads-interrupted.png', fullPage: true });

    // A different file is recognised as such and not sent.
    await choosePaths(page, 'Choose “island.hnw” to resume', [lookalike]);
    await interrupted.getByText(/is not the file that was being uploaded/).waitFor();

    let partRequests = 0;
    const asked: string[] = [];
    page.on('request', (request) => {
      if (request.url().endsWith('/api/v1/uploadPartStatus')) asked.push(request.url());
      if (request.url().endsWith('/api/v1/uploadPart')) partRequests++;
    });
    await choosePaths(page, 'Choose “island.hnw” to resume', [file]);
    await waitForState(page, 'island.hnw', 'Uploaded');
    await job(page, 'island.hnw').getByText('Resumed: the host already had 2 of 6 parts.').waitFor();
    expect(partRequests).toBe(4);
    // The host saw each part exactly once: 0 and 1 before the reload, the rest after it.
    expect(storedParts).toEqual(['0', '1', '2', '3', '4', '5']);
    expect(asked.length).toBeGreaterThanOrEqual(1);
    await page.screenshot({ path: '/tmp/ui-uploads-resumed.png' });

    const content = await contentOf(creator);
    expect(content.Worlds).toHaveLength(1);
    expect(content.Worlds[0]!.Name).toBe('Island');
    const stored = content.Uploads.find((u) => u.FileId === content.Worlds[0]!.Builds[0]!.FileId)!;
    expect(stored.Size).toBe(world.length);
    expect(stored.Hash).toBe(md5(world));
    // Nothing left to resume.
    expect(await page.evaluate(() => localStorage.getItem('hnx.uploads.resume'))).toBe('[]');
    expect(await page.getByTestId('interrupted-upload').count()).toBe(0);
    await rm(dir, { recursive: true, force: true });
    expectNoProblems(tab);
  });

  it('pauses a chunked upload and resumes it from the parts the host already has', async () => {
    const creator = await makeCreator();
    tab = await openTab(browser);
    const { page } = tab;
    await page.goto(host.server.url);
    await page.evaluate(() => {
      localStorage.setItem('hnx.chunkThreshold', String(64 * 1024));
      localStorage.setItem('hnx.chunkSize', String(64 * 1024));
    });
    await signIn(page, creator.username, creator.password);
    await openSection(page);
    const cdp = await tab.context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: 64 * 1024,
    });

    const data = bytes(6 * 64 * 1024, 'paused');
    await chooseFiles(page, 'Choose files', [{ name: 'poster.png', buffer: data }]);
    const row = job(page, 'poster.png');
    await row.getByTestId('job-status').filter({ hasText: 'part 3 of 6' }).waitFor({ timeout: 15_000 });
    await row.getByRole('button', { name: 'Pause upload of poster.png' }).click();
    await waitForState(page, 'poster.png', 'Paused');
    // Usually 2; a part that finished just as Pause was pressed counts too.
    const kept = Number(
      /the host keeps (\d) of 6 parts/.exec((await row.getByTestId('job-status').textContent()) ?? '')?.[1],
    );
    expect(kept).toBeGreaterThanOrEqual(2);
    await page.screenshot({ path: '/tmp/ui-uploads-paused.png' });
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: -1,
    });

    let parts = 0;
    page.on('request', (request) => {
      if (request.url().endsWith('/api/v1/uploadPart')) parts++;
    });
    await row.getByRole('button', { name: 'Resume upload of poster.png' }).click();
    await waitForState(page, 'poster.png', 'Uploaded');
    await row.getByText(`Resumed: the host already had ${kept} of 6 parts.`).waitFor();
    expect(parts).toBe(6 - kept);
    const stored = (await contentOf(creator)).Uploads;
    expect(stored.map((u) => [u.OriginalName, u.Size, u.Hash])).toEqual([
      ['poster.png', data.length, md5(data)],
    ]);
    expectNoProblems(tab);
  });

  it('deletes an avatar after a confirmation that names it and its builds', async () => {
    const creator = await makeCreator();
    const common = { Publicity: 0, Description: '', Tags: [], ImageURL: '' };
    const seeded = await seed(creator, 'doomed.hna', bytes(10_000, 'doomed'), {
      field: 'avatarMeta',
      value: { ...common, Name: 'Doomed', BuildPlatform: 0 },
    });
    await seed(creator, 'doomed-android.hna', bytes(10_000, 'doomed-a'), {
      field: 'avatarMeta',
      value: { ...common, Id: seeded.AvatarId, Name: 'Doomed', BuildPlatform: 1 },
    });
    await seed(creator, 'keeper.hna', bytes(10_000, 'keeper'), {
      field: 'avatarMeta',
      value: { ...common, Name: 'Keeper', BuildPlatform: 0 },
    });
    tab = await openTab(browser);
    const { page } = tab;
    await openUploads(page, creator);

    const row = page.getByTestId('asset-row').filter({ hasText: 'Doomed' });
    await row.getByTestId('build-Android').filter({ hasText: 'Present' }).waitFor();
    await row.getByRole('button', { name: 'Delete Doomed' }).click();
    const confirm = page.getByRole('group', { name: 'Confirm deleting Doomed' });
    expect(await confirm.textContent()).toContain(
      'Delete the avatar “Doomed”? Its Windows and Android builds are deleted from this host too',
    );
    // Focus lands on the safe choice.
    await expect
      .poll(() =>
        confirm.getByRole('button', { name: 'Keep it' }).evaluate((el) => el === document.activeElement),
      )
      .toBe(true);
    await page.screenshot({ path: '/tmp/ui-uploads-delete-confirm.png', fullPage: true });
    await confirm.getByRole('button', { name: 'Delete “Doomed”' }).click();
    await row.waitFor({ state: 'detached' });
    await page
      .getByRole('status')
      .filter({ hasText: 'Deleted the avatar “Doomed”.' })
      .waitFor({ state: 'attached' });

    const content = await contentOf(creator);
    expect(content.Avatars.map((a) => a.Name)).toEqual(['Keeper']);
    expect(content.Uploads.map((u) => u.OriginalName)).toEqual(['keeper.hna']);
    expect(await filesOnDisk(creator)).toHaveLength(1);
    expectNoProblems(tab);
  });

  it('queues several images at once, uploads them in order, and lists them with copy-URL and delete', async () => {
    const creator = await makeCreator();
    tab = await openTab(browser, { permissions: ['clipboard-read', 'clipboard-write'] });
    const { page } = tab;
    await openUploads(page, creator);

    await chooseFiles(page, 'Choose files', [
      { name: 'sunrise.png', buffer: PNG },
      { name: 'sunset.png', buffer: TEAL_PNG },
      { name: 'notes.txt', buffer: Buffer.from('not allowed') },
    ]);
    await page.getByText("“notes.txt” can't be uploaded. The host takes avatars (.hna)").waitFor();
    await waitForState(page, 'sunrise.png', 'Uploaded');
    await waitForState(page, 'sunset.png', 'Uploaded');

    // Dropping works like choosing: the card lights up while a file hovers, and takes it on drop.
    const dataTransfer = await page.evaluateHandle((base64) => {
      const transfer = new DataTransfer();
      const data = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
      transfer.items.add(new File([data], 'dropped.png', { type: 'image/png' }));
      return transfer;
    }, PNG.toString('base64'));
    const composer = page.locator('section.composer');
    await composer.dispatchEvent('dragenter', { dataTransfer });
    expect(await composer.getAttribute('class')).toContain('is-dragging');
    await composer.dispatchEvent('drop', { dataTransfer });
    expect(await composer.getAttribute('class')).not.toContain('is-dragging');
    await waitForState(page, 'dropped.png', 'Uploaded');

    const content = await contentOf(creator);
    expect(content.Uploads.map((u) => u.OriginalName).sort()).toEqual([
      'dropped.png',
      'sunrise.png',
      'sunset.png',
    ]);
    const sunrise = content.Uploads.find((u) => u.OriginalName === 'sunrise.png')!;

    const rowOf = (name: string) => page.getByTestId('file-row').filter({ hasText: name });
    await rowOf('sunrise.png').waitFor();
    await expect
      .poll(() =>
        rowOf('sunrise.png')
          .locator('img')
          .evaluate((img: HTMLImageElement) => img.naturalWidth),
      )
      .toBe(64);
    await rowOf('sunrise.png').getByRole('button', { name: 'Copy URL: the address of sunrise.png' }).click();
    await rowOf('sunrise.png').locator('[data-copy-state="copied"]').waitFor();
    const url = `${host.server.url}/api/v1/file/${creator.userid}/${sunrise.FileId}`;
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(url);

    await rowOf('sunset.png').getByRole('button', { name: 'Delete sunset.png' }).click();
    await page
      .getByRole('group', { name: 'Confirm deleting sunset.png' })
      .getByRole('button', { name: 'Delete “sunset.png”' })
      .click();
    await rowOf('sunset.png').waitFor({ state: 'detached' });
    expect((await contentOf(creator)).Uploads.map((u) => u.OriginalName).sort()).toEqual([
      'dropped.png',
      'sunrise.png',
    ]);
    await page.screenshot({ path: '/tmp/ui-uploads-files.png', fullPage: true });
    expectNoProblems(tab);
  });

  it("builds a world's details with icons and a server script from the host's own files", async () => {
    const creator = await makeCreator();
    const image = await seed(creator, 'icon.png', PNG);
    const script = await seed(creator, 'game.lua', Buffer.from('print("hi")'));
    tab = await openTab(browser);
    const { page } = tab;
    await openUploads(page, creator);

    await chooseFiles(page, 'Choose files', [{ name: 'arena.hnw', buffer: bytes(25_000, 'arena') }]);
    const form = page.getByRole('form', { name: 'Details of arena.hnw' });
    await form.getByLabel('Name', { exact: true }).fill('Arena');
    const iconUrl = `${host.server.url}/api/v1/file/${creator.userid}/${image.UploadData.FileId}`;
    await form.getByLabel('Thumbnail URL').fill(iconUrl);
    await form.getByRole('button', { name: 'Add an icon' }).click();
    await form.getByRole('button', { name: 'Upload world' }).click();
    // An empty icon row is caught before sending.
    await form.getByText('Icon 1: enter its URL or remove the row').waitFor();
    await form.getByLabel('Icon 1 URL').fill(iconUrl);
    await form.getByRole('checkbox', { name: /game\.lua/ }).check();
    await page.screenshot({ path: '/tmp/ui-uploads-world-form.png', fullPage: true });
    await form.getByRole('button', { name: 'Upload world' }).click();
    await waitForState(page, 'arena.hnw', 'Uploaded');

    const world = (await contentOf(creator)).Worlds[0]!;
    expect(world).toMatchObject({ Name: 'Arena', ThumbnailURL: iconUrl, IconURLs: [iconUrl] });
    expect(world.Builds[0]!.ServerScripts).toEqual([
      `${host.server.url}/api/v1/file/${creator.userid}/${script.UploadData.FileId}`,
    ]);
    // The script now belongs to a build: listed as used, not deletable.
    const scriptRow = page.getByTestId('file-row').filter({ hasText: 'game.lua' });
    await scriptRow.getByText('Used by “Arena”').waitFor();
    expect(await scriptRow.getByRole('button', { name: /Delete/ }).count()).toBe(0);
    expectNoProblems(tab);
  });

  it('fits a 360 px wide screen and can be worked with the keyboard', async () => {
    const creator = await makeCreator();
    const common = { Publicity: 0, Description: 'Seeded', Tags: ['demo'], ImageURL: '' };
    const first = await seed(creator, 'pilot.hna', bytes(5000, 'pilot'), {
      field: 'avatarMeta',
      value: { ...common, Name: 'Pilot with a rather long name', BuildPlatform: 0 },
    });
    await seed(creator, 'pilot-a.hna', bytes(5000, 'pilot-a'), {
      field: 'avatarMeta',
      value: { ...common, Id: first.AvatarId, Name: 'Pilot with a rather long name', BuildPlatform: 1 },
    });
    await seed(creator, 'hangar.hnw', bytes(5000, 'hangar'), {
      field: 'worldMeta',
      value: {
        ...common,
        Name: 'Hangar',
        ThumbnailURL: '',
        IconURLs: [],
        ServerScripts: [],
        BuildPlatform: 1,
      },
    });
    await seed(creator, 'badge.png', PNG);
    tab = await openTab(browser, { viewport: { width: 360, height: 760 } });
    const { page } = tab;
    await openUploads(page, creator);
    await page.getByTestId('world-matrix').getByText('Hangar').waitFor();
    expect(await fitsViewport(page)).toBe(true);
    await page.screenshot({ path: '/tmp/ui-uploads-mobile.png', fullPage: true });

    // Keyboard: the pick button takes focus with a visible ring and opens the file chooser on Enter.
    const pick = page.getByRole('button', { name: 'Choose files' });
    // Listening first: Playwright only catches the chooser once its interception is switched on.
    const chooserOpened = page.waitForEvent('filechooser');
    await pick.focus();
    await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Tab');
    expect(await pick.evaluate((el) => el === document.activeElement)).toBe(true);
    // The theme's focus ring (light here: headless Chromium's system setting): an outline no box-shadow can hide.
    const ring = await pick.evaluate((el) => {
      const style = getComputedStyle(el);
      return { style: style.outlineStyle, width: parseFloat(style.outlineWidth) };
    });
    expect(ring.style).toBe('solid');
    expect(ring.width).toBeGreaterThanOrEqual(2);
    await page.keyboard.press('Enter');
    const chooser = await chooserOpened;
    await chooser.setFiles({
      name: 'pilot-v2.hna',
      mimeType: 'application/octet-stream',
      buffer: bytes(5000, 'v2'),
    });
    const form = page.getByRole('form', { name: 'Details of pilot-v2.hna' });
    await form.getByLabel('Upload as').selectOption({
      label: 'Update “Pilot with a rather long name”: replace its Windows build (keeps Android)',
    });
    await form.getByTestId('change-summary').waitFor();
    expect(await fitsViewport(page)).toBe(true);
    await form.screenshot({ path: '/tmp/ui-uploads-mobile-form.png' });
    // Arrow keys move between the platform radios, as native radios do.
    await form.getByRole('radio', { name: /Windows/ }).focus();
    await page.keyboard.press('ArrowRight');
    expect(await form.getByRole('radio', { name: /Android/ }).isChecked()).toBe(true);
    expectNoProblems(tab);
  });
});

describe('uploads on a host with a small size limit', { timeout: 60_000 }, () => {
  let server: HostServer;
  let dataDir: string;
  let browser: Browser;
  let tab: Tab | undefined;

  beforeAll(async () => {
    requireBuiltUi();
    dataDir = await mkdtemp(join(tmpdir(), 'hypernex-e2e-limit-'));
    server = await createServer({
      dataDir,
      host: '127.0.0.1',
      port: 0,
      uiDir: UI_DIR,
      passwordHash: { memoryCost: 1024, timeCost: 1, concurrency: 2 },
      uploads: { maxFileBytes: 100_000 },
    });
    await server.setup.setupOwner({ setupSecret: server.setupSecret!, ...OWNER });
    browser = await launchBrowser();
  });

  afterEach(async () => {
    await tab?.close();
    tab = undefined;
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("refuses a file over the host's published limit when it is picked, sending nothing", async () => {
    tab = await openTab(browser);
    const { page } = tab;
    const sent: string[] = [];
    page.on('request', (request) => {
      if (/\/api\/v1\/upload(Part)?$/.test(request.url())) sent.push(request.url());
    });
    await page.goto(server.url);
    await signIn(page, OWNER.username, OWNER.password);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Uploads' }).click();
    await page.getByText(/up to 100 kB each/).waitFor();
    await page
      .getByTestId('upload-input')
      .setInputFiles([{ name: 'big.png', mimeType: 'image/png', buffer: Buffer.alloc(120_000, 1) }]);
    await page.getByText('“big.png” is 120 kB; this host takes files up to 100 kB.').waitFor();
    expect(await page.getByTestId('upload-job').count()).toBe(0);
    expect(sent).toEqual([]);
    expectNoProblems(tab);
  });

  it('says in words that a file is over the limit, whole or in parts, and keeps nothing', async () => {
    tab = await openTab(browser);
    const { page } = tab;
    // A host that does not publish its rules (an older one answers an unknown call so): the host's own refusal
    // is shown in words.
    await page.route('**/api/v1/uploadRules', (route) =>
      route.fulfill({
        json: { success: false, message: 'Not found', result: { error: { code: 'NOT_FOUND' } } },
      }),
    );
    await page.goto(server.url);
    await page.evaluate(() => {
      localStorage.setItem('hnx.chunkThreshold', String(150_000));
      localStorage.setItem('hnx.chunkSize', String(64 * 1024));
    });
    await signIn(page, OWNER.username, OWNER.password);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Uploads' }).click();

    // 120 kB goes whole (under the part threshold), 300 kB in parts: both are over the 100 kB limit.
    await page.getByTestId('upload-input').setInputFiles([
      { name: 'whole.png', mimeType: 'image/png', buffer: Buffer.alloc(120_000, 1) },
      { name: 'parts.png', mimeType: 'image/png', buffer: Buffer.alloc(300_000, 2) },
    ]);
    for (const name of ['whole.png', 'parts.png']) {
      const row = page.getByTestId('upload-job').filter({ hasText: name });
      await row.getByTestId('job-state').filter({ hasText: 'Failed' }).waitFor({ timeout: 15_000 });
      // The host names its limit when it checks the size itself (parts), not when its multipart parser stops.
      expect(await row.getByTestId('job-error').textContent()).toMatch(
        /^This file is larger than the host allows( \(at most 100 kB\))?\.$/,
      );
      // Sending the same file again cannot help, so it is not offered.
      expect(await row.getByRole('button', { name: /Retry/ }).count()).toBe(0);
    }
    await page.screenshot({ path: '/tmp/ui-uploads-too-large.png' });
    expect(await readdir(join(dataDir, 'files')).catch(() => [])).toEqual([]);
    expect(await page.evaluate(() => localStorage.getItem('hnx.uploads.resume'))).toBe('[]');
    expectNoProblems(tab);
  });
});

async function waitForJob(page: Page, fileName: string, state: string, timeout = 15_000): Promise<void> {
  await page
    .getByTestId('upload-job')
    .filter({ hasText: fileName })
    .getByTestId('job-state')
    .filter({ hasText: state })
    .waitFor({ timeout });
}

describe('uploads across a host restart', { timeout: 90_000 }, () => {
  let server: HostServer;
  let dataDir: string;
  let browser: Browser;
  let tab: Tab | undefined;
  const config = () => ({
    dataDir,
    host: '127.0.0.1',
    port: server?.port ?? 0,
    uiDir: UI_DIR,
    passwordHash: { memoryCost: 1024, timeCost: 1, concurrency: 2 },
  });

  beforeAll(async () => {
    requireBuiltUi();
    dataDir = await mkdtemp(join(tmpdir(), 'hypernex-e2e-restart-'));
    server = await createServer(config());
    await server.setup.setupOwner({ setupSecret: server.setupSecret!, ...OWNER });
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await tab?.close();
    await browser?.close();
    await server?.close().catch(() => undefined);
    await rm(dataDir, { recursive: true, force: true });
  });

  it('waits for a stopped host with one honest message, and continues uploads by itself when it is back', async () => {
    tab = await openTab(browser);
    const { page } = tab;
    await page.goto(server.url);
    await page.evaluate(() => {
      localStorage.setItem('hnx.chunkThreshold', String(64 * 1024));
      localStorage.setItem('hnx.chunkSize', String(64 * 1024));
    });
    await signIn(page, OWNER.username, OWNER.password);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Uploads' }).click();
    await page.locator('[data-testid="shell-connection"][data-health="connected"]').waitFor();
    // A slow uplink keeps the chunked upload going long enough to stop the host in the middle of it.
    const cdp = await tab.context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: 256 * 1024,
    });
    const world = bytes(12 * 64 * 1024, 'harbour');
    await page
      .getByTestId('upload-input')
      .setInputFiles([{ name: 'harbour.hnw', mimeType: 'application/octet-stream', buffer: world }]);
    const form = page.getByRole('form', { name: 'Details of harbour.hnw' });
    await form.getByLabel('Name', { exact: true }).fill('Harbour');
    await form.getByRole('button', { name: 'Upload world' }).click();
    const harbour = page.getByTestId('upload-job').filter({ hasText: 'harbour.hnw' });
    await harbour
      .getByTestId('job-status')
      .filter({ hasText: /part [3-9] of 12/ })
      .waitFor({ timeout: 15_000 });

    await server.close();
    await waitForJob(page, 'harbour.hnw', 'Waiting for host');
    await page.getByTestId('host-down-banner').waitFor({ timeout: 15_000 });
    expect(await harbour.getByTestId('job-status').textContent()).toMatch(
      /^The host cannot be reached\. Stopped at .+; the rest goes when it is back, by itself\./,
    );
    // An upload started while the host is down says the same, once, and nothing about a refusal.
    await page
      .getByTestId('upload-input')
      .setInputFiles([{ name: 'flag.png', mimeType: 'image/png', buffer: PNG }]);
    await waitForJob(page, 'flag.png', 'Waiting for host');
    const flag = page.getByTestId('upload-job').filter({ hasText: 'flag.png' });
    expect(await flag.getByTestId('job-status').textContent()).toBe(
      'The host cannot be reached. This upload starts again by itself when it is back.',
    );
    expect(await flag.getByTestId('job-error').count()).toBe(0);
    expect(await flag.getByRole('button', { name: /Retry/ }).count()).toBe(0);
    await page.screenshot({ path: '/tmp/ui18-uploads-host-down.png', fullPage: true });

    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: -1,
    });
    server = await createServer(config());
    // No click: both finish once the host is back.
    await waitForJob(page, 'harbour.hnw', 'Uploaded', 45_000);
    await waitForJob(page, 'flag.png', 'Uploaded', 45_000);
    // The world is whole on the host: its build is the file as sent, byte for byte.
    const owner = (await server.users.byUsername(OWNER.username))!;
    const stored = (await server.uploads.worlds(owner.Worlds)).find((w) => w.Name === 'Harbour')!;
    const build = (await server.uploads.fileRecord(owner.Id, stored.Builds[0]!.FileId))!;
    expect(build.Hash).toBe(md5(world));
    expect((await server.uploads.filesOf(owner.Id)).map((f) => f.OriginalName).sort()).toEqual([
      'flag.png',
      'harbour.hnw',
    ]);
    await page.screenshot({ path: '/tmp/ui18-uploads-host-back.png', fullPage: true });
    // The browser logged the refused connections while the host was down; nothing else went wrong.
    expect(
      tab.problems.filter(
        (p) => !/ERR_CONNECTION_REFUSED|ERR_CONNECTION_RESET|ERR_EMPTY_RESPONSE|WebSocket/.test(p),
      ),
    ).toEqual([]);
  });
});
