import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import {
  OFFLINE_AFTER_FAILURES,
  parseServerMessage,
  reconnectDelay,
  sessionEndedNotice,
  SocketClient,
  socketUrlFor,
  type SocketEvent,
  type SocketFactory,
} from '../../renderer/shared/socket-client.js';
import { Rank } from '../../server/protocol/enums.js';
import { UsersRepo } from '../../server/store/users.js';
import { createServer, type HostServer } from '../../server/host.js';

describe('reconnect delay', () => {
  it('doubles per failure up to the cap, with at most half of each step left to chance', () => {
    const low = () => 0;
    const high = () => 1;
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => reconnectDelay(n, high))).toEqual([
      1000, 2000, 4000, 8000, 16_000, 30_000, 30_000,
    ]);
    expect([1, 2, 3, 6].map((n) => reconnectDelay(n, low))).toEqual([500, 1000, 2000, 15_000]);
  });

  it('spreads clients over the step instead of retrying in lockstep', () => {
    const delays = new Set([0.1, 0.3, 0.5, 0.7, 0.9].map((r) => reconnectDelay(4, () => r)));
    expect(delays.size).toBe(5);
    for (const delay of delays) expect(delay).toBeGreaterThanOrEqual(4000);
  });
});

describe('server messages', () => {
  it('reads the events the UI uses and ignores anything else', () => {
    expect(
      parseServerMessage(
        JSON.stringify({
          message: 'failedtorequestinvite',
          result: { targetUserId: 'user_b', reason: 'RATE_LIMITED', retryAfter: 12 },
        }),
      ),
    ).toEqual({
      message: 'failedtorequestinvite',
      result: { targetUserId: 'user_b', reason: 'RATE_LIMITED', retryAfter: 12 },
    });
    expect(parseServerMessage('{"message":"friendstatus","result":{"userId":"u","Status":0}}')).toEqual({
      message: 'friendstatus',
      result: { userId: 'u', Status: 0, StatusText: '' },
    });
    expect(parseServerMessage('not json')).toBeNull();
    expect(parseServerMessage('{"message":"gotinviterequest","result":{"fromUserId":1}}')).toBeNull();
    expect(
      parseServerMessage('{"message":"failedtorequestinvite","result":{"targetUserId":"x","reason":"WHO"}}'),
    ).toBeNull();
    expect(parseServerMessage('{"message":"somethingnew","result":{}}')).toBeNull();
  });

  it('uses the page origin, secure when the page is', () => {
    expect(socketUrlFor({ protocol: 'http:', host: '192.168.1.20:5180' })).toBe(
      'ws://192.168.1.20:5180/api/v1/socket',
    );
    expect(socketUrlFor({ protocol: 'https:', host: 'hnx.example' })).toBe('wss://hnx.example/api/v1/socket');
  });
});

/** The `ws` package behind the client's factory seam, remembering every socket so a test can cut one. */
function nodeSockets(): { connect: SocketFactory; opened: WebSocket[] } {
  const opened: WebSocket[] = [];
  const connect: SocketFactory = (url, handlers) => {
    const ws = new WebSocket(url);
    opened.push(ws);
    ws.on('open', () => handlers.onOpen());
    ws.on('message', (data) => handlers.onMessage(String(data)));
    ws.on('close', (code, reason) => handlers.onClose(code, reason.toString()));
    ws.on('error', () => undefined);
    return { send: (text) => ws.send(text), close: (code, reason) => ws.close(code, reason) };
  };
  return { connect, opened };
}

describe('socket client against a real host', () => {
  let server: HostServer;
  let dataDir: string;
  const clients: SocketClient[] = [];

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'hypernex-socket-client-'));
    server = await createServer({
      dataDir,
      host: '127.0.0.1',
      port: 0,
      passwordHash: { memoryCost: 1024, timeCost: 1, concurrency: 2 },
    });
  });

  afterEach(() => {
    for (const client of clients.splice(0)) client.stop();
  });

  afterAll(async () => {
    await server?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  let counter = 0;
  async function account(rank?: Rank) {
    const username = `Sock${++counter}`;
    const { user, token } = await server.accounts.createUser({
      username,
      password: 'Member#Pass1',
      email: `${username.toLowerCase()}@example.test`,
    });
    if (rank !== undefined) {
      await server.store.tx((t) =>
        UsersRepo.in(t).update(user.Id, (draft) => {
          draft.Rank = rank;
        }),
      );
    }
    return { id: user.Id, token: token.content };
  }

  function client(who: { id: string; token: string }, extra: { connect?: SocketFactory } = {}): SocketClient {
    const made = new SocketClient({
      url: `${server.url.replace('http', 'ws')}/api/v1/socket`,
      userId: who.id,
      tokenContent: who.token,
      connect: extra.connect ?? nodeSockets().connect,
      baseDelayMs: 20,
      maxDelayMs: 100,
    });
    clients.push(made);
    return made;
  }

  const connected = (c: SocketClient) => vi.waitFor(() => expect(c.status().health).toBe('connected'));

  it('verifies with the token and delivers invite requests both ways, with the cooldown in the answer', async () => {
    const ann = await account();
    const bea = await account();
    await server.social.act('sendFriendRequest', (await server.users.get(ann.id))!, bea.id);
    await server.social.act('acceptFriendRequest', (await server.users.get(bea.id))!, ann.id);
    const a = client(ann);
    const b = client(bea);
    const seen: SocketEvent[] = [];
    b.subscribe((event) => seen.push(event));
    a.start();
    b.start();
    await connected(a);
    await connected(b);
    expect(a.status()).toMatchObject({ failures: 0, connection: 1, problem: null });

    const sent = await a.requestInvite(bea.id);
    expect(sent).toMatchObject({ kind: 'sent' });
    await vi.waitFor(() => expect(seen.map((e) => e.message)).toContain('gotinviterequest'));
    const got = seen.find((e) => e.message === 'gotinviterequest');
    expect(got?.result).toMatchObject({
      fromUserId: ann.id,
      fromUsername: (await server.users.get(ann.id))!.Username,
    });

    const again = await a.requestInvite(bea.id);
    expect(again).toMatchObject({ kind: 'refused', reason: 'RATE_LIMITED' });
    expect(again.kind === 'refused' && again.retryAfter).toBeGreaterThan(0);
    expect(await a.requestInvite('user_00000000-0000-4000-8000-000000000000')).toEqual({
      kind: 'refused',
      reason: 'UNKNOWN_USER',
    });
  });

  it('reconnects after the connection drops, counting a new connection', async () => {
    const who = await account();
    const { connect, opened } = nodeSockets();
    const c = client(who, { connect });
    const health: string[] = [];
    c.onStatus(() => health.push(c.status().health));
    c.start();
    await connected(c);
    opened[0]!.terminate();
    await vi.waitFor(() => expect(c.status().connection).toBe(2));
    expect(health).toContain('reconnecting');
    expect(c.status()).toMatchObject({ health: 'connected', failures: 0, retryAt: null });
  });

  it('says offline after repeated failures and keeps trying', async () => {
    const who = await account();
    let attempts = 0;
    const refusing: SocketFactory = (_url, handlers) => {
      attempts++;
      setTimeout(() => handlers.onClose(1006, ''), 1);
      return { send: () => undefined, close: () => undefined };
    };
    const c = client(who, { connect: refusing });
    c.start();
    await vi.waitFor(() => expect(c.status().failures).toBeGreaterThanOrEqual(OFFLINE_AFTER_FAILURES));
    expect(c.status().health).toBe('offline');
    expect(c.status().retryAt).not.toBeNull();
    const before = attempts;
    await vi.waitFor(() => expect(attempts).toBeGreaterThan(before));
  });

  it('ends the session for good when the host revokes the token (a ban closes the socket with 4001)', async () => {
    const target = await account();
    const mod = await account(Rank.Admin);
    const c = client(target);
    const revoked: string[] = [];
    c.onRevoked((why) => revoked.push(why));
    c.start();
    await connected(c);
    await server.moderation.act((await server.users.get(mod.id))!, 'banuser', target.id, {
      banReason: 'test',
      banDescription: '',
      timeEnd: Math.floor(Date.now() / 1000) + 3600,
    });
    await vi.waitFor(() => expect(revoked).toEqual(['banned']));
    expect(sessionEndedNotice(revoked[0]!)).toMatch(/banned this account/);
    expect(c.status()).toMatchObject({ health: 'offline', retryAt: null });
    c.retryNow();
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(c.status().connection).toBe(1);
  });

  it('words the sign-in notice by why the host ended the session', () => {
    expect(sessionEndedNotice('banned')).toMatch(/banned this account/);
    expect(sessionEndedNotice('warned')).toMatch(/warned this account/);
    for (const why of ['token expired or revoked', '', 'anything else']) {
      expect(sessionEndedNotice(why)).toMatch(/^Your session has ended/);
    }
  });

  it('ends the session when the token is refused at verification', async () => {
    const who = await account();
    const c = client({ id: who.id, token: 'not-the-token' });
    const revoked: string[] = [];
    c.onRevoked((why) => revoked.push(why));
    c.start();
    await vi.waitFor(() => expect(revoked).toEqual(['The token is not valid for that user.']));
    expect(c.status().health).toBe('offline');
  });

  it('answers an invite request at once when not connected', async () => {
    const who = await account();
    const c = client(who);
    expect(await c.requestInvite('user_x')).toEqual({
      kind: 'unknown',
      problem: 'Not connected to the host right now.',
    });
  });
});
