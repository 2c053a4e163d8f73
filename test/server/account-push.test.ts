import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AccountChangedResult } from '../../server/protocol/moderation-tools.js';
import { editUser, expectOk, signUp, startHost, type Account, type TestHost } from './helpers.js';
import { TestSocket } from './socket-client.js';

/** Issue 28: rank, badge, warn and ban changes reach the user's own open windows at once (`accountchanged`). */
describe('account changes pushed to the user', () => {
  let host: TestHost;
  let owner: Account;
  let user: Account;
  const sockets: TestSocket[] = [];
  const act = (action: string, fields: Record<string, unknown> = {}) =>
    host.post('moderation', {
      userid: owner.id,
      tokenContent: owner.token,
      action,
      targetUserId: user.id,
      ...fields,
    });
  const open = async (a: Account) => {
    const socket = await TestSocket.verified(host.server.url, a.id, a.token);
    sockets.push(socket);
    return socket;
  };

  beforeEach(async () => {
    host = await startHost();
    owner = await signUp(host, 'owner');
    user = await signUp(host, 'user');
    await editUser(host, owner.id, (d) => void (d.Rank = 6));
  });
  afterEach(async () => {
    for (const s of sockets.splice(0)) s.close();
    await host.close();
  });

  it("pushes a promotion to every open socket of the user, with the user's new view", async () => {
    const window = await open(user);
    const game = await open(user);
    const bystander = await open(owner);
    const started = Date.now();
    expectOk(await act('setrank', { newRank: 4 }));
    for (const socket of [window, game]) {
      const result = (await socket.next('accountchanged')) as unknown as AccountChangedResult;
      expect(result).toMatchObject({ userId: user.id, Rank: 4 });
    }
    expect(Date.now() - started).toBeLessThan(2000);
    await expect(bystander.next('accountchanged', 300)).rejects.toThrow();
  });

  it('pushes badge changes and a lifted warning, and nothing for content removals', async () => {
    const window = await open(user);
    expectOk(await act('addbadge', { badgeName: 'Helper' }));
    expect(await window.next('accountchanged')).toMatchObject({ Badges: ['helper'] });
    expectOk(await act('removebadge', { badgeName: 'helper' }));
    expect(await window.next('accountchanged')).toMatchObject({ Badges: [] });
  });

  it('pushes a ban before the socket is closed for it', async () => {
    const window = await open(user);
    const timeEnd = Math.floor(Date.now() / 1000) + 3600;
    expectOk(await act('banuser', { banReason: 'Spam', banDescription: 'Spam', timeEnd }));
    expect(await window.next('accountchanged')).toMatchObject({ BanStatus: { isBanned: true } });
    expect((await window.waitClosed()).reason).toBe('banned');
  });
});
