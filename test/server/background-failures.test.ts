import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { assertBuilt } from './cli-helpers.js';

const HOST_MODULE = fileURLToPath(new URL('../../dist/server/host.js', import.meta.url));

/**
 * The last net under background work (issue 27): a rejection nobody handled is logged and the process goes on,
 * where Node would end it. Run in a process of its own (vitest treats one in its workers as a test failure).
 */
describe('background failures', () => {
  it('logs a rejection that escaped every handler and keeps the process serving', () => {
    assertBuilt();
    const script = `
      const { keepServingAfterRejections } = await import(${JSON.stringify(HOST_MODULE)});
      keepServingAfterRejections({ error: (object, message) => console.log('logged:', message, object.err.message) });
      Promise.reject(new Error('a history write failed'));
      setTimeout(() => console.log('still serving'), 100);
    `;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 10_000,
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain(
      'logged: a failure escaped every handler (a bug); the host goes on serving a history write failed',
    );
    expect(run.stdout).toContain('still serving');
  });

  it('ends the process without it, as Node does (so the test above shows the handler at work)', () => {
    const run = spawnSync(
      process.execPath,
      ['-e', "Promise.reject(new Error('x')); setTimeout(() => {}, 100)"],
      {
        encoding: 'utf8',
        timeout: 10_000,
      },
    );
    expect(run.status).not.toBe(0);
  });
});
