import { spawn } from 'node:child_process';
import { mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BenchError, ROOT } from '../harness/host.js';
import { summary } from '../harness/stats.js';

const SAMPLE = join(ROOT, 'bench', 'harness', 'main-import.js');
const STUB = join(ROOT, 'bench', 'harness', 'electron-stub.js');
/** Top-level folders of the build the entry may reach (dist/shared once main no longer reaches dist/server). */
const BUILT = ['main', 'server', 'shared', 'bundle', 'renderer'];

/**
 * A folder where the build's own files resolve `electron` to the stub without module hooks (which run on another
 * thread and add a round trip to every import): dist/* and every package are symlinks, node_modules/electron is a
 * package of the stub, and Node runs with --preserve-symlinks so resolution walks this folder, not the real one.
 */
async function farm(dir, dist) {
  await mkdir(join(dir, 'dist'), { recursive: true });
  const built = await readdir(dist);
  for (const name of built.filter((n) => BUILT.includes(n))) {
    await symlink(join(dist, name), join(dir, 'dist', name));
  }
  await symlink(join(ROOT, 'package.json'), join(dir, 'package.json'));
  const modules = join(dir, 'node_modules');
  await mkdir(modules);
  for (const name of await readdir(join(ROOT, 'node_modules'))) {
    if (name === 'electron' || name.startsWith('.')) continue;
    if (!name.startsWith('@')) {
      await symlink(join(ROOT, 'node_modules', name), join(modules, name));
      continue;
    }
    await mkdir(join(modules, name));
    for (const sub of await readdir(join(ROOT, 'node_modules', name))) {
      await symlink(join(ROOT, 'node_modules', name, sub), join(modules, name, sub));
    }
  }
  await mkdir(join(modules, 'electron'));
  const stub = { name: 'electron', type: 'module', exports: './index.js' };
  await writeFile(join(modules, 'electron', 'package.json'), JSON.stringify(stub));
  await symlink(STUB, join(modules, 'electron', 'index.js'));
}

/** One fresh process running main-import.js; its JSON line. */
function sample(mode, entry, flags = []) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...flags, SAMPLE, mode, entry], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (err += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0)
        reject(new BenchError(`main-import.js ${mode} exited with code ${code}: ${err.trim()}`));
      else resolve(JSON.parse(out));
    });
  });
}

/** What the entry's graph loads: our built modules (dist/server ones apart) and packages. */
function inventory(urls, dir) {
  const paths = urls.map((url) => relative(dir, fileURLToPath(url)));
  const packages = new Set();
  for (const p of paths.filter((p) => p.startsWith('node_modules/'))) {
    const parts = p.split('/');
    packages.add(parts.slice(1, parts[1]?.startsWith('@') ? 3 : 2).join('/'));
  }
  const ours = paths.filter((p) => p.startsWith('dist/'));
  return { ours, server: ours.filter((p) => p.startsWith('dist/server/')), packages: [...packages].sort() };
}

export default {
  describe:
    "The desktop app's main process start: how long importing its entry (dist/main/main.js, electron stubbed) " +
    'takes in a fresh Node process, and what it loads; all of it runs before the window can open. No host.',
  options: {
    samples: { default: 15, help: 'fresh processes timed (after one warm-up that is not counted)' },
    dist: {
      type: 'string',
      help: 'another build folder to time (e.g. a copy of dist/ from before a change)',
    },
  },

  async load(ctx) {
    const { samples } = ctx.options;
    const dist = resolve(ctx.options.dist ?? join(ROOT, 'dist'));
    const dir = join(ctx.tmp, 'main-start');
    await farm(dir, dist);
    const entry = join(dir, 'dist', 'main', 'main.js');
    const flags = ['--preserve-symlinks', '--preserve-symlinks-main'];
    const times = [];
    const cpu = [];
    for (let i = 0; i <= samples; i++) {
      ctx.progress(`sample ${i}/${samples} ...`);
      const { importMs, cpuMs } = await sample('time', entry, flags);
      if (i === 0) continue;
      times.push(importMs);
      cpu.push(cpuMs);
    }
    const loaded = inventory((await sample('inventory', entry, flags)).files, dir);
    const s = summary(times);
    return {
      title: `importing main/main.js of ${dist} with electron stubbed, ${samples} fresh processes`,
      rows: [
        ['import, median', s.p50, 'ms'],
        ['import, fastest', Math.min(...times), 'ms'],
        ['import, slowest', s.max, 'ms'],
        ['CPU of the import, median', summary(cpu).p50, 'ms'],
        ['modules of the build loaded', loaded.ours.length, ''],
        ['  of them dist/server/', loaded.server.length, ''],
        ['packages loaded', loaded.packages.length, ''],
      ],
      notes: [
        `packages: ${loaded.packages.join(', ') || 'none'}`,
        `dist/server: ${loaded.server.join(', ') || 'none'}`,
      ],
      details: { times, cpu, loaded },
    };
  },
};
