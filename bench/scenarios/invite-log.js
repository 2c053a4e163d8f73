import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { dist, withCpu } from '../harness/host.js';

export default {
  describe:
    'Compacting an invite-request history of many live requests (1,000 users with full histories) with the ' +
    "server's AppendLog (fsync on): time, and the longest event-loop stall meanwhile (every socket waits that long).",
  options: {
    entries: { default: 200_000, help: 'live requests' },
    rounds: { default: 3, help: 'compactions' },
  },

  async load(ctx) {
    const { entries: count, rounds } = ctx.options;
    const { AppendLog } = await dist('store/append-log.js');
    const { inviteEventJson } = await dist('store/file-invite-history.js');
    const id = (prefix, n) => `${prefix}_${String(n).padStart(32, '0')}`;
    const entries = Array.from({ length: count }, (_, i) => ({
      t: 'request',
      to: id('user', i % 1000),
      request: {
        requestId: id('invreq', i),
        fromUserId: id('user', (i * 7) % 1000),
        sentAt: 1_700_000_000,
        expiresAt: 1_700_086_400,
        state: 'new',
        updatedAt: 1_700_000_000,
      },
    }));
    const log = await AppendLog.open(join(ctx.tmp, 'invite-requests.jsonl'), () => null, { indexed: false });
    const rows = [];
    for (let round = 1; round <= rounds; round++) {
      const delay = monitorEventLoopDelay({ resolution: 1 });
      delay.enable();
      const [, cpu] = await withCpu(0, () => log.compact(entries, inviteEventJson));
      delay.disable();
      rows.push([`round ${round}: compaction`, cpu.wallSeconds * 1000, 'ms']);
      rows.push([`round ${round}: longest stall`, delay.max / 1e6, 'ms']);
      rows.push([`round ${round}: stall p99`, delay.percentile(99) / 1e6, 'ms']);
    }
    await log.close();
    return { title: `${count.toLocaleString('en-US')} invite requests, ${rounds} rounds`, rows };
  },
};
