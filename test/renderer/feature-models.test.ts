import { describe, expect, it } from 'vitest';
import {
  formatWait,
  refusalText,
  sortFriends,
  type Person,
  type Presence,
} from '../../renderer/features/friends/friends-model.js';
import {
  inviteCodeState,
  maxUsesOf,
  usesCountProblem,
  usesText,
} from '../../renderer/features/host/host-admin-model.js';
import type { InviteCodeDto } from '../../server/protocol/host-info.js';
import {
  bindAddressProblem,
  bridgeErrorText,
  dataDirProblem,
  portProblem,
  portWarning,
  settingsPatch,
} from '../../renderer/features/host/host-model.js';
import {
  effectiveState,
  fromLiveRequest,
  mergeRequests,
} from '../../renderer/features/invites/invite-state.js';
import {
  banEnd,
  describeEntry,
  grantableRanks,
  toLocalInput,
  whyNotModeratable,
  type LogEntry,
  type ModerationState,
} from '../../renderer/features/moderation/moderation-model.js';
import { Rank } from '../../server/protocol/enums.js';
import type { InviteRequestDto } from '../../server/protocol/socket.js';
import { TIME_END_MAX } from '../../server/protocol/schemas.js';

const NOW = Date.UTC(2030, 0, 15, 12, 0, 0);

describe('moderation rules in the panel', () => {
  const mod = { Id: 'user_mod', Rank: Rank.Moderator };
  const user = (Id: string, rank: Rank) => ({ Id, Username: Id, Rank: rank });

  it('allows acting only on users ranked strictly below, never on yourself', () => {
    expect(whyNotModeratable(mod, user('user_t', Rank.Registered))).toBeNull();
    expect(whyNotModeratable(mod, user('user_a', Rank.Admin))).toBe(
      'user_a is Admin, ranked above you. You can act only on users ranked below you (Moderator).',
    );
    expect(whyNotModeratable(mod, user('user_m', Rank.Moderator))).toContain('the same rank as you');
    expect(whyNotModeratable(mod, user('user_mod', Rank.Registered))).toContain('This is you');
    expect(whyNotModeratable({ Id: 'x', Rank: Rank.Verified }, user('user_t', Rank.Guest))).toContain(
      'Moderator or higher',
    );
  });

  it('offers only ranks below your own, without the current one', () => {
    expect(grantableRanks(Rank.Moderator, Rank.Registered)).toEqual([
      Rank.Guest,
      Rank.Incompleter,
      Rank.Verified,
    ]);
    expect(grantableRanks(Rank.Owner, Rank.Admin)).toEqual([0, 1, 2, 3, 4]);
  });

  it('turns presets into an end time and checks a custom one', () => {
    const nowS = NOW / 1000;
    expect(banEnd('1h', NOW, '')).toEqual({ timeEnd: nowS + 3600 });
    expect(banEnd('7d', NOW, '')).toEqual({ timeEnd: nowS + 7 * 86_400 });
    expect(banEnd('30d', NOW, '')).toEqual({ timeEnd: nowS + 30 * 86_400 });
    const tomorrow = toLocalInput(NOW + 86_400_000);
    expect(banEnd('custom', NOW, tomorrow)).toEqual({ timeEnd: nowS + 86_400 });
    expect(banEnd('custom', NOW, '')).toEqual({ problem: 'Pick the date and time the ban ends' });
    expect(banEnd('custom', NOW, 'soon')).toEqual({ problem: 'Enter a date and time' });
    expect(banEnd('custom', NOW, toLocalInput(NOW - 60_000))).toEqual({
      problem: 'The end must be in the future',
    });
    const tooLate = banEnd('custom', NOW, toLocalInput((TIME_END_MAX + 3600) * 1000));
    expect('problem' in tooLate && tooLate.problem).toMatch(/^The end must be on or before /);
  });

  it('describes log entries in one line', () => {
    const state: ModerationState = {
      Id: 'user_t',
      Username: 'Tara',
      Rank: Rank.Registered,
      Badges: [],
      BanStatus: { isBanned: false, BanBegin: 0, BanEnd: 0, BanReason: '', BanDescription: '' },
      BanCount: 0,
      WarnStatus: { isWarned: false, TimeWarned: 0, WarnReason: '', WarnDescription: '' },
      WarnCount: 0,
      isBanned: false,
    };
    const entry = (action: LogEntry['action'], fields: Record<string, unknown>, after = state): LogEntry => ({
      id: 'modlog_1',
      time: 0,
      moderatorId: 'user_m',
      moderatorName: 'Mia',
      action,
      targetUserId: 'user_t',
      targetName: 'Tara',
      fields,
      before: state,
      after,
    });
    expect(describeEntry(entry('setrank', { newRank: 3 }, { ...state, Rank: Rank.Verified }))).toBe(
      'Registered → Verified',
    );
    expect(describeEntry(entry('addbadge', { badgeName: 'helper' }))).toBe('“helper”');
    expect(describeEntry(entry('warnuser', { warnReason: 'Rude', warnDescription: '' }))).toBe('Rude');
    expect(describeEntry(entry('banuser', { banReason: 'Spam', timeEnd: NOW / 1000 }))).toMatch(
      /^until .+ · Spam$/,
    );
    expect(describeEntry(entry('unbanuser', {}))).toBe('');
  });
});

describe('invite request states', () => {
  const base: InviteRequestDto = {
    requestId: 'invreq_1',
    fromUserId: 'user_a',
    fromUsername: 'Ann',
    toUserId: 'user_b',
    sentAt: NOW / 1000,
    expiresAt: NOW / 1000 + 900,
    state: 'new',
    updatedAt: NOW / 1000,
  };

  it('reads an open request past its expiry as expired, and a decided one as decided', () => {
    expect(effectiveState(base, NOW)).toBe('new');
    expect(effectiveState({ ...base, state: 'seen' }, NOW + 900_000)).toBe('expired');
    expect(effectiveState({ ...base, state: 'dismissed' }, NOW + 900_000)).toBe('dismissed');
  });

  it('merges live and loaded requests by id, newest first, without undoing a known change', () => {
    const live = fromLiveRequest(
      {
        fromUserId: 'user_a',
        requestId: 'invreq_2',
        fromUsername: 'Ann',
        sentAt: base.sentAt + 10,
        expiresAt: 0,
      },
      'user_b',
    );
    const dismissed = { ...base, state: 'dismissed' as const, updatedAt: base.updatedAt + 5 };
    const list = mergeRequests([dismissed], [base, live]);
    expect(list.map((r) => [r.requestId, r.state])).toEqual([
      ['invreq_2', 'new'],
      ['invreq_1', 'dismissed'],
    ]);
    // Same second: a later "seen" replaces "new", but a stale "new" never replaces "seen".
    const seen = { ...base, state: 'seen' as const };
    expect(mergeRequests([base], [seen])[0]?.state).toBe('seen');
    expect(mergeRequests([seen], [base])[0]?.state).toBe('seen');
  });
});

describe('friends', () => {
  it('says refusals in words, with the wait of a cooldown', () => {
    expect(refusalText('OFFLINE', 'Bea')).toBe('Not sent: Bea is offline.');
    expect(refusalText('DO_NOT_DISTURB', 'Bea')).toBe('Not sent: Bea is on Do Not Disturb.');
    expect(refusalText('RATE_LIMITED', 'Bea', 25)).toBe(
      'Not sent: you asked Bea a moment ago. You can ask again in 25 seconds.',
    );
    expect(refusalText('NOT_FRIENDS', 'Bea')).toBe('Not sent: Bea does not have you as a friend.');
    expect(refusalText('TARGET_UNREACHABLE', 'Bea')).toBe(
      'Not sent: Bea is signed in on another host that cannot be reached right now; try again in a moment.',
    );
    expect(formatWait(1)).toBe('1 second');
    expect(formatWait(60)).toBe('1 minute');
    expect(formatWait(125.2)).toBe('2 minutes 6 seconds');
  });

  it('lists online friends first, by name, with live presence winning over what was loaded', () => {
    const people: Person[] = [
      { id: '1', username: 'zed', status: 1, statusText: '' },
      { id: '2', username: 'Amy', status: 0, statusText: '' },
      { id: '3', username: 'bob', status: 0, statusText: '' },
    ];
    const live = new Map<string, Presence>([['3', { status: 4, statusText: 'busy' }]]);
    expect(sortFriends(people, live).map((p) => `${p.username}:${p.status}`)).toEqual([
      'bob:4',
      'zed:1',
      'Amy:0',
    ]);
  });
});

describe('host settings', () => {
  it('accepts the addresses main accepts and refuses the rest', () => {
    for (const ok of ['127.0.0.1', '0.0.0.0', '192.168.1.20', '::', '::1', 'fe80::1', 'my-host.lan']) {
      expect(bindAddressProblem(ok), ok).toBeUndefined();
    }
    for (const bad of ['', '256.1.1.1', '1.2.3', 'not an address!', '-bad.lan']) {
      expect(bindAddressProblem(bad), bad).toBeDefined();
    }
  });

  it('checks ports and data folders, and warns about ports that need admin rights', () => {
    expect(portProblem('5180')).toBeUndefined();
    expect(portProblem('0')).toBeUndefined();
    expect(portProblem('65536')).toBe('Ports go up to 65535');
    expect(portProblem('51.8')).toBeDefined();
    expect(portProblem('abc')).toBeDefined();
    expect(portWarning('80')).toContain('admin rights');
    expect(portWarning('0')).toContain('free port');
    expect(portWarning('5180')).toBeUndefined();
    expect(dataDirProblem('/srv/hypernex')).toBeUndefined();
    expect(dataDirProblem('C:\\Hypernex')).toBeUndefined();
    expect(dataDirProblem('relative/dir')).toContain('full path');
  });

  it('sends only what changed', () => {
    const current = { host: '0.0.0.0', port: 5180, dataDir: '/srv/data' };
    expect(settingsPatch(current, { host: '0.0.0.0', port: '5180', dataDir: '/srv/data ' })).toEqual({});
    expect(settingsPatch(current, { host: '127.0.0.1', port: '5181', dataDir: '/srv/data' })).toEqual({
      host: '127.0.0.1',
      port: 5181,
    });
  });

  it("strips Electron's wrapping from IPC errors", () => {
    expect(
      bridgeErrorText(
        new Error(
          "Error invoking remote method 'host:update-settings': IpcArgumentError: port must be a whole number",
        ),
      ),
    ).toBe('port must be a whole number');
  });
});

describe('host administration model', () => {
  const code = (over: Partial<InviteCodeDto>): InviteCodeDto => ({
    id: 'invcode_1',
    label: '',
    singleUse: false,
    maxUses: 0,
    createdAt: 1000,
    createdBy: 'user_1',
    expiresAt: 0,
    uses: [],
    revoked: false,
    active: true,
    ...over,
  });
  const used = (n: number) => Array.from({ length: n }, (_, i) => ({ userId: `user_${i}`, at: 1000 }));

  it('says why a code can or cannot be used, revoked first', () => {
    expect(inviteCodeState(code({}), 2000)).toBe('active');
    expect(inviteCodeState(code({ maxUses: 2, uses: used(2) }), 2000)).toBe('usedUp');
    expect(inviteCodeState(code({ expiresAt: 1500 }), 2000)).toBe('expired');
    expect(inviteCodeState(code({ revoked: true, maxUses: 1, uses: used(1) }), 2000)).toBe('revoked');
  });

  it('counts uses in words', () => {
    expect(usesText(code({ maxUses: 5, uses: used(2) }))).toBe('Used 2 of 5 times');
    expect(usesText(code({ maxUses: 0, uses: used(1) }))).toBe('Used once, no limit');
    expect(usesText(code({ maxUses: 1 }))).toBe('Single use, unused');
  });

  it('takes a number of sign-ups from 2 to the host limit, and maps the choice to maxUses', () => {
    expect(usesCountProblem('10')).toBeUndefined();
    expect(usesCountProblem('1')).toMatch(/Once/);
    expect(usesCountProblem('ten')).toMatch(/whole number/);
    expect(usesCountProblem('10001')).toMatch(/No limit/);
    expect([maxUsesOf('once', '9'), maxUsesOf('unlimited', '9'), maxUsesOf('count', ' 9 ')]).toEqual([
      1, 0, 9,
    ]);
  });
});
