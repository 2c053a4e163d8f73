#!/usr/bin/env node
// Invite-log compaction bench: compacts an invite-request history of N live requests (default 200,000: 1,000
// users with full histories of 200) with the server's AppendLog, and reports how long it took and the longest
// the event loop was held up meanwhile (every socket waits that long). Exit 0 when clean, 1 on errors.
//
//   node bench/invite-log.js [--entries 200000] [--rounds 3]
//
// Needs the compiled server: npx tsc -p tsconfig.build.json
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { BenchError, RM_OPTIONS } from './lib.js';

const MODULE = fileURLToPath(new URL('../dist/server/store/append-log.js', import.meta.url));
const INVITES = fileURLToPath(new URL('../dist/server/services/invites.js', import.meta.url));

async function main() {
  const { values } = parseArgs({
    options: { entries: { type: 'string', default: '200000' }, rounds: { type: 'string', default: '3' } },
  });
  const count = Number(values.entries);
  const rounds = Number(values.rounds);
  if (!(count > 0) || !(rounds > 0)) throw new BenchError('--entries and --rounds take positive numbers');
  if (!existsSync(MODULE)) throw new BenchError('build the server first: npx tsc -p tsconfig.build.json');
  const { AppendLog } = await import(pathToFileURL(MODULE).href);
  // The service's own line builder, as its compactions use.
  const { inviteEventJson } = await import(pathToFileURL(INVITES).href);
  const dir = await mkdtemp(join(os.tmpdir(), 'hypernex-invite-log-bench-'));
  try {
    // The shape the invites service writes: one request line per kept request.
    const entries = Array.from({ length: count }, (_, i) => ({
      t: 'request',
      to: `user_${String(i % 1000).padStart(32, '0')}`,
      request: {
        requestId: `invreq_${String(i).padStart(32, '0')}`,
        fromUserId: `user_${String((i * 7) % 1000).padStart(32, '0')}`,
        sentAt: 1_700_000_000,
        expiresAt: 1_700_086_400,
        state: 'new',
        updatedAt: 1_700_000_000,
      },
    }));
    const log = await AppendLog.open(join(dir, 'invite-requests.jsonl'), () => null, { indexed: false });
    console.log(`compacting ${count.toLocaleString('en-US')} invite requests, ${rounds} rounds (fsync on)`);
    for (let round = 1; round <= rounds; round++) {
      const delay = monitorEventLoopDelay({ resolution: 1 });
      delay.enable();
      const started = performance.now();
      await log.compact(entries, inviteEventJson);
      const ms = performance.now() - started;
      delay.disable();
      console.log(
        `round ${round}: ${ms.toFixed(0)} ms in all, longest event-loop stall ${(delay.max / 1e6).toFixed(1)} ms` +
          ` (p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms)`,
      );
    }
    await log.close();
  } finally {
    await rm(dir, RM_OPTIONS);
  }
}

main().catch((error) => {
  console.error(error instanceof BenchError ? error.message : error);
  process.exit(1);
});
