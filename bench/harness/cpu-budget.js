// A host held to a share of one core, as a host on a small machine of its own: a CPU quota of the kernel's cgroups
// (v2 `cpu.max`, or v1 `cpu.cfs_quota_us`), in a group made for it beside the one it runs in. Needs root (or a
// delegated cgroup) and the cpu controller; a BenchError says so otherwise.
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BenchError } from './host.js';

const PERIOD_US = 100_000;
const V2_ROOT = '/sys/fs/cgroup';
const V1_ROOT = '/sys/fs/cgroup/cpu';

/** Where `pid`'s CPU group is, and how its quota is written: v2 if the cpu controller is there, else v1. */
function hierarchyOf(pid) {
  const lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8').trim().split('\n');
  const v2 = join(V2_ROOT, 'cgroup.controllers');
  if (existsSync(v2) && readFileSync(v2, 'utf8').split(/\s+/).includes('cpu')) {
    const path = lines.find((line) => line.startsWith('0::'))?.slice(3) ?? '/';
    return { v2: true, parent: join(V2_ROOT, path) };
  }
  if (existsSync(join(V1_ROOT, 'cpu.cfs_quota_us'))) {
    const path = lines.map((line) => line.split(':')).find(([, kinds]) => kinds.split(',').includes('cpu'));
    return { v2: false, parent: join(V1_ROOT, path?.[2] ?? '/') };
  }
  return null;
}

/**
 * Holds every thread of `pid` to `share` of one core (0.3: 30 ms of CPU per 100 ms); resolves with a function
 * that lets it go (back to its group) and removes the group.
 */
export async function holdToCpu(pid, share) {
  const where = hierarchyOf(pid);
  if (!where)
    throw new BenchError('--host-cpu needs the cpu cgroup controller (cgroup v2 cpu.max or v1 cpu)');
  const group = join(where.parent, `hypernex-bench-${process.pid}-${pid}`);
  const quota = Math.max(1000, Math.round(share * PERIOD_US));
  try {
    await mkdir(group);
    if (where.v2) await writeFile(join(group, 'cpu.max'), `${quota} ${PERIOD_US}`);
    else {
      await writeFile(join(group, 'cpu.cfs_period_us'), String(PERIOD_US));
      await writeFile(join(group, 'cpu.cfs_quota_us'), String(quota));
    }
    await writeFile(join(group, 'cgroup.procs'), String(pid));
  } catch (error) {
    await rmdir(group).catch(() => undefined);
    throw new BenchError(
      `--host-cpu: could not make a CPU group (${error.code ?? error.message}); run as root`,
    );
  }
  return async () => {
    // A process still running goes back to its group first: a group with a process in it cannot be removed.
    await writeFile(join(where.parent, 'cgroup.procs'), String(pid)).catch(() => undefined);
    await rmdir(group).catch(() => undefined);
  };
}
