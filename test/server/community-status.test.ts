import { describe, expect, it } from 'vitest';
import { COMMUNITY_CHECK_MS } from '../../server/protocol/host-info.js';
import { communityStatus } from '../../server/services/community-status.js';

/** The Host screen's community facts (server/services/community-status.ts), with the services faked. */
describe('communityStatus', () => {
  it('says the embedded folder holds the community when nothing is shared', async () => {
    expect(await communityStatus(null, null)).toEqual({
      storage: 'embedded',
      database: null,
      redis: null,
      hosts: 1,
    });
  });

  it('checks the database and Redis, with the hosts the database hears', async () => {
    const status = await communityStatus(
      { url: 'postgres://hx:pw@db.lan:5432/hx', ping: async () => 1, hostCount: () => 3 },
      { url: 'redis://cache.lan:6379', ping: async () => 'PONG' },
    );
    expect(status).toMatchObject({
      storage: 'postgres',
      hosts: 3,
      database: { address: 'postgres://hx:***@db.lan:5432/hx', ok: true, problem: null },
      redis: { address: 'redis://cache.lan:6379', ok: true, problem: null },
    });
    expect(status.database!.ms).toBeGreaterThanOrEqual(0);
  });

  it('never shows a password, in the address or in the reason a check failed (as written or decoded)', async () => {
    const url = 'postgres://hx:s%40cret@db.lan:5432/hx';
    const status = await communityStatus(
      {
        url,
        ping: () => Promise.reject(new Error('password authentication failed: s%40cret / s@cret')),
        hostCount: () => 1,
      },
      null,
    );
    expect(status.database).toEqual({
      address: 'postgres://hx:***@db.lan:5432/hx',
      ok: false,
      ms: null,
      problem: 'password authentication failed: *** / ***',
    });
  });

  it(`answers within ${COMMUNITY_CHECK_MS / 1000} s when a service never does`, async () => {
    const status = await communityStatus(null, {
      url: 'redis://cache.lan:6379',
      ping: () => new Promise(() => undefined),
    });
    expect(status.redis).toMatchObject({ ok: false, ms: null, problem: 'no answer within 2 s' });
  });
});
