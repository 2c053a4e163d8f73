#!/usr/bin/env node
// One sample of the desktop app's main-process start, in a fresh Node process: how long `import(ENTRY)` takes (ENTRY:
// dist/main/main.js, the whole graph the window's process loads before it can open a window). Prints one JSON line.
//   node bench/harness/main-import.js time ENTRY       time only; `electron` must resolve to electron-stub.js
//                                                     some other way (bench/scenarios/main-start.js runs it in
//                                                     a folder whose node_modules/electron is the stub)
//   node bench/harness/main-import.js inventory ENTRY  module hooks stub `electron` and list every module loaded
//                                                     (the hooks run on another thread and slow the import: its
//                                                     time is not the figure)
import { register } from 'node:module';
import { performance } from 'node:perf_hooks';
import { setImmediate as tick } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { MessageChannel } from 'node:worker_threads';

const [mode, entry] = process.argv.slice(2);
if ((mode !== 'time' && mode !== 'inventory') || !entry) {
  process.stderr.write('usage: main-import.js time|inventory ENTRY\n');
  process.exit(2);
}

const files = new Set();
let port1;
if (mode === 'inventory') {
  const channel = new MessageChannel();
  port1 = channel.port1;
  port1.on('message', (url) => files.add(url));
  const data = { port: channel.port2 };
  register('./electron-hooks.js', { parentURL: import.meta.url, data, transferList: [channel.port2] });
}

const cpuBefore = process.cpuUsage();
const started = performance.now();
await import(pathToFileURL(entry).href);
const importMs = performance.now() - started;
// The process's CPU time over the import: steadier than the wall clock on a machine busy with other work.
const cpu = process.cpuUsage(cpuBefore);
const cpuMs = (cpu.user + cpu.system) / 1000;
if (port1) {
  // The hooks' last messages arrive after the import settled.
  for (let i = 0; i < 5; i++) await tick();
  port1.close();
}
process.stdout.write(`${JSON.stringify({ importMs, cpuMs, files: [...files] })}\n`);
