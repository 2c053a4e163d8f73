import { rm } from 'node:fs/promises';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConfigOverrides } from '../../server/config.js';
import { Rank } from '../../server/protocol/enums.js';
import type { WebhookDeliveryDto, WebhookSettingsDto } from '../../server/protocol/webhooks.js';
import {
  editUser,
  expectFail,
  expectOk,
  signUp,
  startHost,
  tempDir,
  type Account,
  type TestHost,
} from './helpers.js';
import { WEBHOOK_SENDER } from '../../server/services/webhook-queue.js';
import { SETTINGS } from '../../server/store/settings.js';
import { dropSchemas, freshDatabaseUrl } from './pg-helpers.js';
import { WebhookReceiver } from './webhook-receiver.js';

/** Tiny waits so retries happen within a test; the defaults are in server/config.ts. */
const FAST: ConfigOverrides['webhooks'] = {
  retryBaseMs: 50,
  retryMaxMs: 400,
  closeGraceMs: 100,
  timeoutMs: 2000,
};

const as = (me: Account, extra: Record<string, unknown> = {}) => ({
  userid: me.id,
  tokenContent: me.token,
  ...extra,
});

/** A host with a moderator and a user to act on (`bad_guy`: an underscore Discord would read as markdown). */
async function community(h: TestHost) {
  const owner = await signUp(h, 'owner');
  const mod = await signUp(h, 'mod');
  const target = await signUp(h, 'bad_guy');
  await editUser(h, owner.id, (d) => void (d.Rank = Rank.Owner));
  await editUser(h, mod.id, (d) => void (d.Rank = Rank.Moderator));
  return { owner, mod, target };
}

async function setWebhook(
  h: TestHost,
  owner: Account,
  extra: Record<string, unknown>,
): Promise<WebhookSettingsDto> {
  return expectOk(await h.post('webhookSettings', as(owner, extra))).Webhook as WebhookSettingsDto;
}

const ban = (h: TestHost, mod: Account, target: Account, banReason = 'griefing') =>
  h.post(
    'moderation',
    as(mod, {
      action: 'banuser',
      targetUserId: target.id,
      banReason,
      banDescription: 'see the log',
      timeEnd: Math.floor(Date.now() / 1000) + 3600,
    }),
  );

async function lastDelivery(h: TestHost, owner: Account): Promise<WebhookDeliveryDto | null> {
  return (await setWebhook(h, owner, {})).lastDelivery;
}

describe('outgoing webhook', () => {
  let host: TestHost | undefined;
  let receiver: WebhookReceiver;
  afterEach(async () => {
    await host?.close();
    host = undefined;
    await receiver?.stop();
  });

  it('posts one Discord message for a ban: mentions off, names and reasons escaped', async () => {
    const h = (host = await startHost({ webhooks: FAST }));
    receiver = await new WebhookReceiver().start();
    const { owner, mod, target } = await community(h);
    await setWebhook(h, owner, { url: receiver.url() });

    expectOk(await ban(h, mod, target, '@everyone come see *this*'), 'Done!');
    await expect.poll(() => receiver.posts.length).toBe(1);
    const { body, headers, path } = receiver.posts[0]!;
    expect(path).toBe('/api/webhooks/1234567890/a-secret-token-XYZ9');
    expect(headers['content-type']).toBe('application/json');
    expect(body.allowed_mentions).toEqual({ parse: [] });
    expect(body.content).toBe('**mod** banned **bad\\_guy**');
    const embed = body.embeds[0]!;
    expect(embed.title).toBe('User banned');
    expect(new Date(embed.timestamp).getTime()).toBeGreaterThan(Date.now() - 60_000);
    const fields = Object.fromEntries(embed.fields.map((f) => [f.name, f.value]));
    expect(fields.Moderator).toBe(`**mod**\n\`${mod.id}\``);
    expect(fields.User).toBe(`**bad\\_guy**\n\`${target.id}\``);
    expect(fields.Reason).toBe('@\u200beveryone come see \\*this\\*');
    expect(JSON.stringify(body)).not.toContain('@everyone');
    expect(fields.Until).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    // Exactly one, and the Host screen says it went through.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(receiver.posts).toHaveLength(1);
    expect(await lastDelivery(h, owner)).toMatchObject({ ok: true, attempts: 1, detail: 'HTTP 204' });
  });

  it('posts one message for a sign-up, and none for an event that is turned off', async () => {
    const h = (host = await startHost({ webhooks: FAST }));
    receiver = await new WebhookReceiver().start();
    const { owner, mod, target } = await community(h);
    const saved = await setWebhook(h, owner, { url: receiver.url(), moderation: false });
    expect(saved.events).toEqual({ moderation: false, signups: true });

    await signUp(h, 'new_kid');
    await expect.poll(() => receiver.posts.length).toBe(1);
    const { body } = receiver.posts[0]!;
    expect(body.content).toBe('New account: **new\\_kid**');
    expect(body.allowed_mentions).toEqual({ parse: [] });
    expect(body.embeds[0]!.fields).toContainEqual(
      expect.objectContaining({ name: 'Rank', value: 'Registered' }),
    );

    expectOk(await ban(h, mod, target));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.posts).toHaveLength(1);
  });

  it('answers the action at once while the receiver takes 5 s', async () => {
    const h = (host = await startHost({ webhooks: { ...FAST, timeoutMs: 10_000 } }));
    receiver = await new WebhookReceiver().start();
    receiver.answer = (_post, res) => {
      setTimeout(() => res.writeHead(204).end(), 5000);
    };
    const { owner, mod, target } = await community(h);
    await setWebhook(h, owner, { url: receiver.url() });

    const started = Date.now();
    expectOk(await ban(h, mod, target), 'Done!');
    expect(Date.now() - started).toBeLessThan(1000);
    // The message is on its way meanwhile.
    await expect.poll(() => receiver.posts.length).toBe(1);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('delivers after a retry to a receiver that was down (connection refused) and came back', async () => {
    const h = (host = await startHost({ webhooks: { ...FAST, retryBaseMs: 300, maxAttempts: 6 } }));
    receiver = await new WebhookReceiver().start();
    const port = receiver.port;
    await receiver.stop();
    const { owner, mod, target } = await community(h);
    await setWebhook(h, owner, { url: receiver.url() });

    expectOk(await ban(h, mod, target), 'Done!');
    await expect
      .poll(async () => (await lastDelivery(h, owner))?.detail)
      .toBe('connection refused; trying again');
    await receiver.start(port);
    await expect.poll(() => receiver.posts.length, { timeout: 10_000 }).toBe(1);
    const delivered = await lastDelivery(h, owner);
    expect(delivered).toMatchObject({ ok: true, detail: 'HTTP 204' });
    expect(delivered!.attempts).toBeGreaterThanOrEqual(2);
    expect(receiver.posts[0]!.body.embeds[0]!.title).toBe('User banned');
  });

  it('waits what an HTTP 429 asks (retry_after) before sending again', async () => {
    const h = (host = await startHost({ webhooks: { ...FAST, retryBaseMs: 10 } }));
    receiver = await new WebhookReceiver().start();
    receiver.answer = (_post, res) => {
      // The first answer is Discord's rate limit; the next ones let the message through.
      if (receiver.posts.length === 1) {
        res.writeHead(429, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ message: 'You are being rate limited.', retry_after: 0.6, global: false }));
      } else res.writeHead(204).end();
    };
    const { owner, mod, target } = await community(h);
    await setWebhook(h, owner, { url: receiver.url() });

    expectOk(await ban(h, mod, target));
    await expect.poll(() => receiver.posts.length, { timeout: 5000 }).toBe(2);
    const gap = receiver.posts[1]!.at - receiver.posts[0]!.at;
    expect(gap).toBeGreaterThanOrEqual(550);
    // Kept once the answer came back (the receiver saw the post before).
    await expect.poll(async () => await lastDelivery(h, owner)).toMatchObject({ ok: true, attempts: 2 });
  });

  it('gives a message up when a 429 asks for a longer wait than retryAfterMaxMs', async () => {
    const h = (host = await startHost({ webhooks: { ...FAST, retryAfterMaxMs: 1000 } }));
    receiver = await new WebhookReceiver().start();
    receiver.answer = (_post, res) => {
      res.writeHead(429, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: 'You are being rate limited.', retry_after: 30 }));
    };
    const { owner, mod, target } = await community(h);
    await setWebhook(h, owner, { url: receiver.url() });

    expectOk(await ban(h, mod, target));
    await expect
      .poll(async () => await lastDelivery(h, owner))
      .toMatchObject({ ok: false, attempts: 1, detail: 'HTTP 429: You are being rate limited.' });
    expect(receiver.posts).toHaveLength(1);
  });

  it('closes within closeGraceMs while a message is being sent; the next start sends it', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn', base: undefined }, { write: (line: string) => lines.push(line) });
    const dir = await tempDir('hnx-webhooks-');
    const h = (host = await startHost({ webhooks: { ...FAST, closeGraceMs: 200 } }, { logger, dir }));
    receiver = await new WebhookReceiver().start();
    receiver.answer = (_post, res) => {
      setTimeout(() => res.writeHead(204).end(), 5000);
    };
    const { owner, mod, target } = await community(h);
    await setWebhook(h, owner, { url: receiver.url() });
    expectOk(await ban(h, mod, target));
    await expect.poll(() => receiver.posts.length).toBe(1);

    const started = Date.now();
    host = undefined;
    await h.close();
    expect(Date.now() - started).toBeLessThan(1500);
    expect(lines.some((l) => /webhook message was not sent: the host closed; it stays queued/.test(l))).toBe(
      true,
    );
    // The ban was acknowledged, so its message is kept: the host started again on the folder sends it.
    receiver.answer = (_post, res) => {
      res.writeHead(204).end();
    };
    host = await startHost({ webhooks: FAST }, { dir });
    await expect.poll(() => receiver.posts.length).toBe(2);
    expect(receiver.posts[1]!.body.content).toBe('**mod** banned **bad\\_guy**');
    await expect.poll(async () => await lastDelivery(host!, owner)).toMatchObject({ ok: true, attempts: 1 });
    await host.close();
    host = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  it('gives a message up after its tries when the receiver never answers (per-request timeout)', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn', base: undefined }, { write: (line: string) => lines.push(line) });
    const h = (host = await startHost({ webhooks: { ...FAST, timeoutMs: 200, maxAttempts: 2 } }, { logger }));
    receiver = await new WebhookReceiver().start();
    receiver.answer = () => undefined;
    const { owner, mod, target } = await community(h);
    await setWebhook(h, owner, { url: receiver.url() });

    expectOk(await ban(h, mod, target));
    await expect
      .poll(async () => await lastDelivery(h, owner), { timeout: 5000 })
      .toMatchObject({ ok: false, attempts: 2, detail: 'timed out after 200 ms' });
    expect(receiver.posts).toHaveLength(2);
    // The log says what was being sent, and never the whole URL.
    const givenUp = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => /given up/.test(String(l.msg)));
    expect(givenUp).toMatchObject({
      what: `banuser of ${target.id} by ${mod.id}`,
      content: '**mod** banned **bad\\_guy**',
      attempts: 2,
    });
    expect(lines.join('\n')).not.toContain('a-secret-token');
  });

  it('drops the oldest queued message, with a log line, when the queue is full', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn', base: undefined }, { write: (line: string) => lines.push(line) });
    const h = (host = await startHost({ webhooks: { ...FAST, queueSize: 2 } }, { logger }));
    receiver = await new WebhookReceiver().start();
    const held: Array<() => void> = [];
    receiver.answer = (_post, res) => {
      held.push(() => res.writeHead(204).end());
    };
    const { owner } = await community(h);
    await setWebhook(h, owner, { url: receiver.url() });

    await signUp(h, 'first');
    await expect.poll(() => receiver.posts.length).toBe(1);
    // While the first is held: three more into a queue of two (the sender trims it before its next try).
    for (const name of ['second', 'third', 'fourth']) await signUp(h, name);
    receiver.answer = (_post, res) => {
      res.writeHead(204).end();
    };
    held.shift()!();
    await expect.poll(() => receiver.posts.length).toBe(3);
    expect(lines.filter((l) => /webhook queue full/.test(l))).toHaveLength(1);
    expect(receiver.posts.map((p) => p.body.content)).toEqual([
      'New account: **first**',
      'New account: **third**',
      'New account: **fourth**',
    ]);
  });

  it('never shows the URL to a client: the settings answer it masked', async () => {
    const h = (host = await startHost({ webhooks: FAST }));
    receiver = await new WebhookReceiver().start();
    const { owner } = await community(h);
    const url = receiver.url();
    const answers = [
      await h.post('webhookSettings', as(owner, { url })),
      await h.post('webhookSettings', as(owner)),
      await h.post('testWebhook', as(owner)),
      await h.post('hostSettings', as(owner)),
      await h.post('hostStatus', as(owner)),
      await h.post('getUser', { userid: owner.id, tokenContent: owner.token }),
    ];
    for (const answer of answers) {
      expectOk(answer);
      expect(JSON.stringify(answer)).not.toContain('a-secret-token');
    }
    const view = answers[1]!.result!.Webhook as WebhookSettingsDto;
    expect(view).toMatchObject({
      configured: true,
      maskedUrl: `http://127.0.0.1:${receiver.port}/…XYZ9`,
      events: { moderation: true, signups: true },
    });
    expect(answers[2]!.message).toBe('Delivered the test message');
    expect(answers[2]!.result!.Delivery).toMatchObject({ ok: true, what: 'test', detail: 'HTTP 204' });
    expect(receiver.posts[0]!.body.embeds[0]!.title).toBe('Webhook test');

    // Cleared with "": nothing configured, and a test has nowhere to go.
    expect(await setWebhook(h, owner, { url: '' })).toMatchObject({ configured: false, maskedUrl: null });
    expectFail(await h.post('testWebhook', as(owner)), 'WEBHOOK_NOT_SET');
  });

  it('refuses a URL that is not http(s), holds credentials, is too long or is this host, naming the field', async () => {
    const h = (host = await startHost({ webhooks: FAST }));
    receiver = await new WebhookReceiver().start();
    const { owner } = await community(h);
    await setWebhook(h, owner, { url: receiver.url() });
    const bad = [
      'ftp://example.com/hook',
      'javascript:alert(1)',
      'file:///etc/passwd',
      'discord.com/api/webhooks/1/x',
      'https://user:secret@example.com/hook',
      `https://example.com/${'x'.repeat(2100)}`,
      `${h.server.url}/api/v1/createUser`,
      `http://localhost:${h.server.port}/`,
    ];
    for (const url of bad) {
      const answer = expectFail(await h.post('webhookSettings', as(owner, { url })), 'INVALID_PARAMETERS');
      expect(answer.result?.error?.fields?.url, url).toEqual(expect.any(String));
    }
    expect(
      expectFail(
        await h.post('webhookSettings', as(owner, { url: 'ftp://example.com/hook' })),
        'INVALID_PARAMETERS',
      ).result?.error?.fields,
    ).toEqual({ url: 'must start with https:// or http://' });
    // Nothing was changed by any of them.
    expect((await setWebhook(h, owner, {})).maskedUrl).toBe(`http://127.0.0.1:${receiver.port}/…XYZ9`);
  });

  it('is for the owner and admins only', async () => {
    const h = (host = await startHost({ webhooks: FAST }));
    receiver = await new WebhookReceiver().start();
    const { owner, mod } = await community(h);
    for (const [path, body] of [
      ['webhookSettings', {}],
      ['webhookSettings', { url: receiver.url() }],
      ['testWebhook', {}],
    ] as const) {
      expectFail(await h.post(path, as(mod, body)), 'FORBIDDEN');
      expectFail(await h.post(path, as(owner, { ...body, tokenContent: 'not-a-token' })), 'INVALID_TOKEN');
    }
    expect((await setWebhook(h, owner, {})).configured).toBe(false);
    expect(receiver.posts).toHaveLength(0);
  });
});

describe('outgoing webhook with two hosts on one database', () => {
  let a: TestHost;
  let b: TestHost;
  let dir: string;
  let receiver: WebhookReceiver;
  afterEach(async () => {
    await a?.close().catch(() => undefined);
    await b?.close().catch(() => undefined);
    await receiver?.stop();
    await rm(dir, { recursive: true, force: true });
    await dropSchemas();
  });

  it('sends each action once, whichever host handled it; every host shows the newest delivery', async () => {
    dir = await tempDir('hnx-webhooks-');
    const database = await freshDatabaseUrl();
    a = await startHost({ database, webhooks: FAST }, { dir });
    b = await startHost({ database, webhooks: FAST }, { dir });
    receiver = await new WebhookReceiver().start();
    const { owner, mod, target } = await community(a);
    // Set through A, used by B: the setting is the community's.
    await setWebhook(a, owner, { url: receiver.url() });
    expectOk(await ban(b, mod, target));
    await expect.poll(() => receiver.posts.length).toBe(1);
    // Delivered by B, shown by both hosts.
    const banned = { ok: true, what: `banuser of ${target.id} by ${mod.id}` };
    await expect.poll(async () => await lastDelivery(a, owner)).toMatchObject(banned);
    expect(await lastDelivery(b, owner)).toMatchObject(banned);
    await signUp(a, 'newcomer');
    await expect.poll(() => receiver.posts.length).toBe(2);
    const signedUp = { ok: true, what: expect.stringMatching(/^sign-up of /) as unknown };
    await expect.poll(async () => await lastDelivery(b, owner)).toMatchObject(signedUp);
    expect(await lastDelivery(a, owner)).toMatchObject(signedUp);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.posts.map((p) => p.body.content).sort()).toEqual([
      '**mod** banned **bad\\_guy**',
      'New account: **newcomer**',
    ]);
    // A new URL: what went to the old one says nothing about it, on any host.
    await setWebhook(b, owner, { url: receiver.url('/api/webhooks/1234567890/another-token') });
    expect(await lastDelivery(a, owner)).toBeNull();
  });

  it('goes on from another host at once when the sending host closes mid-send', async () => {
    dir = await tempDir('hnx-webhooks-');
    const database = await freshDatabaseUrl();
    // A claim this long would keep B waiting past the test's polls: only A letting go explains B's send.
    const slowLapse = { ...FAST, senderLeaseMs: 60_000 };
    a = await startHost({ database, webhooks: slowLapse }, { dir });
    receiver = await new WebhookReceiver().start();
    receiver.answer = () => undefined; // A's POST hangs
    const { owner, mod, target } = await community(a);
    await setWebhook(a, owner, { url: receiver.url() });
    expectOk(await ban(a, mod, target));
    await expect.poll(() => receiver.posts.length).toBe(1);
    b = await startHost({ database, webhooks: slowLapse }, { dir });
    receiver.answer = (_post, res) => {
      res.writeHead(204).end();
    };
    await a.close();
    await expect.poll(() => receiver.posts.length, { timeout: 5000 }).toBe(2);
    expect(receiver.posts[1]!.body.content).toBe('**mod** banned **bad\\_guy**');
    await expect.poll(async () => await lastDelivery(b, owner)).toMatchObject({ ok: true });
  });

  it('takes over from a sender that died (its claim left behind) once the claim lapses', async () => {
    dir = await tempDir('hnx-webhooks-');
    const database = await freshDatabaseUrl();
    const shortLapse = { ...FAST, timeoutMs: 400, senderLeaseMs: 1500 };
    a = await startHost({ database, webhooks: shortLapse }, { dir });
    b = await startHost({ database, webhooks: shortLapse }, { dir });
    receiver = await new WebhookReceiver().start();
    const { owner, mod, target } = await community(a);
    await setWebhook(a, owner, { url: receiver.url() });
    // As a sender killed mid-send leaves it: its claim, renewed a moment ago, that nobody will renew again.
    await a.server.core.store.tx((t) => {
      t.repo(SETTINGS).put(WEBHOOK_SENDER, { by: 'a-process-that-died', at: Date.now() });
    });
    const banned = Date.now();
    expectOk(await ban(b, mod, target));
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(receiver.posts).toHaveLength(0);
    await expect.poll(() => receiver.posts.length, { timeout: 5000 }).toBe(1);
    expect(receiver.posts[0]!.at - banned).toBeGreaterThanOrEqual(1400);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.posts).toHaveLength(1);
  });
});
