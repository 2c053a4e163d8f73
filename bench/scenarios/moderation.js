import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { procIo, procMemory, startHost, withCpu } from '../harness/host.js';
import { httpLoad } from '../harness/http.js';
import { seed } from '../harness/seed.js';
import { failuresOf, fmt } from '../harness/stats.js';

const REASONS = ['Spamming in chat', 'Harassing other players', 'Inappropriate avatar', 'Griefing a world'];
const DESCRIPTION = 'Reported by several players in the lobby; kept doing it after a verbal warning.';
const BAN = { isBanned: false, BanBegin: 0, BanEnd: 0, BanReason: '', BanDescription: '' };
const WARN = { isWarned: false, TimeWarned: 0, WarnReason: '', WarnDescription: '' };
const BLANK = { Rank: 2, Badges: [], BanCount: 0, WarnCount: 0 };

/**
 * A year of history shaped as server/services/moderation.ts ModerationLogEntry (warnings, bans, badges and ranks
 * in turn, with their fields), each entry's `before` the previous `after` of its target.
 */
function* history(count, moderators, targets, now) {
  const states = new Map();
  for (let i = 0; i < count; i++) {
    const [moderator, target] = [moderators[i % moderators.length], targets[(i * 7919) % targets.length]];
    const time = now - 365 * 86_400 + Math.floor((i * 365 * 86_400) / count);
    const blank = { Id: target.id, Username: target.username, ...BLANK, BanStatus: BAN, WarnStatus: WARN };
    const before = states.get(target.id) ?? { ...blank, isBanned: false };
    const after = structuredClone(before);
    const [reason, end] = [REASONS[i % REASONS.length], time + 86_400];
    const action = [
      before.WarnStatus.isWarned ? 'unwarnuser' : 'warnuser',
      before.isBanned ? 'unbanuser' : 'banuser',
      before.Badges.length ? 'removebadge' : 'addbadge',
      'setrank',
    ][i % 4];
    let fields = {};
    if (action === 'warnuser') {
      const warned = { isWarned: true, TimeWarned: time, WarnReason: reason, WarnDescription: DESCRIPTION };
      [after.WarnStatus, fields] = [warned, { warnReason: reason, warnDescription: DESCRIPTION }];
      after.WarnCount++;
    }
    if (action === 'banuser') {
      const ban = { isBanned: true, BanBegin: time, BanEnd: end, BanReason: reason, BanDescription: reason };
      [after.BanStatus, fields] = [ban, { banReason: reason, banDescription: reason, timeEnd: end }];
      after.BanCount++;
    }
    if (action === 'unwarnuser') after.WarnStatus.isWarned = false;
    if (action === 'unbanuser') after.BanStatus.isBanned = false;
    if (action.endsWith('badge'))
      [after.Badges, fields] = [before.Badges.length ? [] : ['supporter'], { badgeName: 'supporter' }];
    if (action === 'setrank') fields = { newRank: (after.Rank = before.Rank === 2 ? 3 : 2) };
    after.isBanned = after.BanStatus.isBanned;
    states.set(target.id, after);
    const by = { moderatorId: moderator.id, moderatorName: moderator.username };
    const on = { targetUserId: target.id, targetName: target.username };
    yield { id: `modlog_bench_${i}`, seq: 0, time, ...by, action, ...on, fields, before, after };
  }
}

/**
 * Actions in passes over the targets: a pass warns every target, the next unwarns them, so a target's two
 * actions are a whole pass apart and never in flight together. The counter goes on across runs.
 */
function actions(moderators, targets) {
  let k = 0;
  return () => {
    const target = targets[k % targets.length];
    const moderator = moderators[k % moderators.length];
    const action = Math.floor(k++ / targets.length) % 2 === 0 ? 'warnuser' : 'unwarnuser';
    const warn = action === 'warnuser';
    const reason = warn
      ? { warnReason: `Bench warning ${k}`, warnDescription: 'Issued by the moderation bench.' }
      : {};
    const as = { userid: moderator.id, tokenContent: moderator.token };
    const check = (a) => {
      const { ModerationState: state, LogEntry: entry } = a.result ?? {};
      const same = a.message === 'Done!' && state?.Id === target.id && entry?.action === action;
      return same && state.WarnStatus?.isWarned === warn
        ? null
        : `${action}: ${JSON.stringify(a.result).slice(0, 160)}`;
    };
    return { path: '/api/v1/moderation', body: { ...as, action, targetUserId: target.id, ...reason }, check };
  };
}

async function runLogSize(ctx, entries) {
  const o = ctx.options;
  const dataDir = join(ctx.tmp, `data-log-${entries}`);
  ctx.progress(`[log ${entries}] seeding ${o.users} users and ${entries} log entries ...`);
  const make = async (api) => {
    const users = await api.users(o.users, (i) => ({ username: `bench${i}`, rank: i < o.clients ? 4 : 2 }));
    const [moderators, targets] = [users.slice(0, o.clients), users.slice(o.clients)];
    for (const entry of history(entries, moderators, targets, api.now)) await api.append('moderation', entry);
    return { moderators, targets };
  };
  const { moderators, targets } = await seed(ctx, make, { dataDir });
  const logPath = join(dataDir, 'moderation-log.jsonl');
  const logBytes = (await stat(logPath)).size;
  const host = await startHost(ctx, { dataDir });
  const afterStartup = await procMemory(host.pid);
  const next = actions(moderators, targets);
  const load = (seconds) => httpLoad(host.url, { connections: o.clients, seconds, next });
  if (o.warmup > 0) await load(o.warmup);
  ctx.progress(`[log ${entries}] ${o.clients} moderators, ${o.seconds} s ...`);
  const logBefore = (await stat(logPath)).size;
  const ioBefore = await procIo(host.pid);
  const [r, cpu] = await withCpu(host.pid, () => ctx.guard(load(o.seconds)));
  const io = await procIo(host.pid);
  const logAfter = (await stat(logPath)).size;
  await host.stop();
  const userFile = (t) => stat(join(dataDir, 'users', `${t.id}.json`)).then((s) => s.size);
  const sizes = await Promise.all(targets.slice(0, 200).map(userFile));
  const per = (n) => n / r.count;
  return {
    entries,
    logMiB: logBytes / 1048576,
    startupMs: host.startupMs,
    afterStartup,
    ...r,
    cpu,
    cpuMicrosPerAction: per(1e6 * cpu.serverSeconds),
    logBytesPerAction: per(logAfter - logBefore),
    userFileBytes: sizes.reduce((a, b) => a + b, 0) / sizes.length,
    wcharPerAction: per(io.wchar - ioBefore.wchar),
    dirtiedPerAction: per(io.writeBytes - ioBefore.writeBytes),
    writesPerAction: per(io.syscw - ioBefore.syscw),
  };
}

export default {
  describe:
    'Acknowledged moderation actions (warn/unwarn, one moderator per connection) with many users and, for each ' +
    'log size asked, a moderation log of that many entries: actions/s, p50/p99, startup, bytes and CPU per action, ' +
    'and the growth of the per-action cost from the smallest to the largest log.',
  options: {
    logs: { default: '0,100000,300000', help: 'log sizes in entries (the targets are on 100000 if listed)' },
    users: { default: 10_000, help: 'users, moderators included' },
    clients: { default: 64, help: 'concurrent moderators' },
    warmup: { default: 1, help: 'seconds of unreported load first' },
  },

  async load(ctx) {
    const sizes = ctx.options.logs.split(',').map(Number);
    const runs = [];
    for (const entries of sizes.sort((a, b) => a - b)) runs.push(await runLogSize(ctx, entries));
    const ref = runs.find((x) => x.entries === 100_000) ?? runs.at(-1);
    const rows = [
      [`actions/s (${ref.entries} log)`, ref.perSecond, '/s', ['>=', 1000]],
      [`p99 (${ref.entries} log)`, ref.p99, 'ms', ['<', 250]],
    ];
    if (runs.length > 1) {
      const [small, large] = [runs[0], runs.at(-1)];
      const growth = (of) => of(large) / of(small);
      const vs = `${large.entries} vs ${small.entries}`;
      const bytes = (x) => x.logBytesPerAction + x.userFileBytes;
      rows.push([`bytes/action growth ${vs}`, growth(bytes), 'x', ['<', 1.1]]);
      rows.push([`dirtied B/action growth ${vs}`, growth((x) => x.dirtiedPerAction), 'x', ['<', 1.1]]);
      rows.push([`CPU/action growth ${vs}`, growth((x) => x.cpuMicrosPerAction), 'x', ['<', 1.25]]);
    }
    for (const x of runs) {
      const at = `log ${x.entries} (${x.logMiB.toFixed(1)} MiB)`;
      const n = (v) => fmt(v, '');
      rows.push([`${at}: startup`, x.startupMs, 'ms']);
      const latency = `${fmt(x.p50, 'ms')} / ${fmt(x.p99, 'ms')}`;
      rows.push([`${at}: actions/s, p50 / p99`, `${n(x.perSecond)} /s, ${latency}`]);
      rows.push([`${at}: log B + user file B / action`, `${n(x.logBytesPerAction)} + ${n(x.userFileBytes)}`]);
      const io = `${n(x.wcharPerAction)} / ${n(x.dirtiedPerAction)} / ${x.writesPerAction.toFixed(2)}`;
      rows.push([`${at}: wchar / dirtied B / writes per action`, io]);
      rows.push([`${at}: CPU per action`, x.cpuMicrosPerAction, 'us']);
      const rss = [x.afterStartup.rssMiB, x.afterStartup.hwmMiB].map((v) => fmt(v, 'MiB')).join(' / ');
      rows.push([`${at}: RSS / peak after startup`, rss]);
    }
    return {
      title: `${ctx.options.users} users, ${ctx.options.clients} moderators, ${ctx.options.seconds} s per log size`,
      rows,
      notes: [
        'dirtied: page-cache bytes written for storage (/proc/PID/io write_bytes); wchar: bytes to write calls.',
      ],
      details: { runs },
      failures: failuresOf(runs),
    };
  },
};
