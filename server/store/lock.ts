import { readFileSync } from 'node:fs';
import { open, readFile, unlink } from 'node:fs/promises';
import { hostname, uptime } from 'node:os';
import { join } from 'node:path';

export class DataFolderInUseError extends Error {
  constructor(dir: string, holder: string) {
    super(
      `Data folder ${dir} is already in use by ${holder}. Stop that process or choose another --data-dir.`,
    );
    this.name = 'DataFolderInUseError';
  }
}

/**
 * Who holds a lock: enough to tell a live holder from a dead one whose process id was reused (after a reboot, or
 * by the time ids wrap): the machine's boot (Linux boot id, else the boot time to the minute) and, where the
 * system tells it, the process's start time.
 */
export interface LockHolder {
  pid: number;
  hostname: string;
  boot: string;
  /** The process's start time in clock ticks since boot (Linux), or null where unknown. */
  started: string | null;
}

function bootIdentity(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    // No boot id (macOS, Windows): the boot time, to the minute, tells one boot from the next.
    return `boot@${Math.round((Date.now() / 1000 - uptime()) / 60)}`;
  }
}

/** A process's start time (field 22 of /proc/PID/stat), or null where the system does not tell it. */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count fields after its closing one.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function currentHolder(): LockHolder {
  return {
    pid: process.pid,
    hostname: hostname(),
    boot: bootIdentity(),
    started: processStartTime(process.pid),
  };
}

/** Whether the recorded holder is still the process that took the lock. */
export function holderIsLive(holder: LockHolder, self = currentHolder()): boolean {
  if (holder.hostname !== self.hostname) return true; // another machine (a network folder): cannot tell, refuse
  if (holder.boot !== self.boot) return false; // the machine restarted since: the holder is gone
  if (holder.pid === self.pid) return false; // our own pid from an earlier life of this process id
  if (!isAlive(holder.pid)) return false;
  if (holder.started !== null) {
    const started = processStartTime(holder.pid);
    if (started !== null && started !== holder.started) return false; // the id now belongs to another process
  }
  return true;
}

const heldLocks = new Set<string>();

/** Takes `dir`'s lock (companion.lock), breaking one whose holder is gone; returns its release. */
export async function acquireLock(dir: string): Promise<() => Promise<void>> {
  const lockPath = join(dir, 'companion.lock');
  if (heldLocks.has(lockPath)) throw new DataFolderInUseError(dir, 'this process');
  const self = currentHolder();
  const body = JSON.stringify({ ...self, startedAt: Date.now() });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(lockPath, 'wx');
      try {
        await handle.writeFile(body);
        await handle.sync();
      } finally {
        await handle.close();
      }
      heldLocks.add(lockPath);
      return async () => {
        heldLocks.delete(lockPath);
        // At release: a lock file left behind names a process that is gone, which the next start treats as stale.
        await unlink(lockPath).catch(() => undefined);
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = await readLockHolder(lockPath);
      if (holder && holderIsLive(holder, self)) {
        throw new DataFolderInUseError(
          dir,
          holder.hostname === self.hostname
            ? `process ${holder.pid}`
            : `process ${holder.pid} on ${holder.hostname}`,
        );
      }
      // The holder is gone (killed, crashed, or the machine restarted): the lock is stale.
      await unlink(lockPath).catch(() => undefined);
    }
  }
  throw new DataFolderInUseError(dir, 'another process (the lock could not be taken)');
}

async function readLockHolder(path: string): Promise<LockHolder | null> {
  try {
    const parsed = JSON.parse(await readFile(path, 'utf8')) as Partial<LockHolder>;
    if (typeof parsed.pid === 'number' && typeof parsed.hostname === 'string') {
      return {
        pid: parsed.pid,
        hostname: parsed.hostname,
        // Locks of earlier versions name no boot: treat them as this boot, as those versions did.
        boot: typeof parsed.boot === 'string' ? parsed.boot : bootIdentity(),
        started: typeof parsed.started === 'string' ? parsed.started : null,
      };
    }
  } catch {
    // An empty or torn lock file is a lock whose writer died before finishing it.
  }
  return null;
}
