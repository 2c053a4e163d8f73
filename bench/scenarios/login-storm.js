import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { BenchError, cpuWindow, startHost } from '../harness/host.js';
import { post } from '../harness/http.js';
import { PASSWORD, seedUsers } from '../harness/seed.js';
import { median } from '../harness/stats.js';

const QUIET_LOGINS = 5;
/** The real user's login starts this long after the storm's requests were sent (they are queued by then). */
const HEAD_START_MS = 200;

/** One login: its latency (ms); `ok` says whether it must succeed or be refused as incorrect. */
async function login(url, username, password, ok) {
  const started = performance.now();
  const answer = await post(url, 'login', { username, password }, { expectFail: !ok });
  const ms = performance.now() - started;
  const code = answer.result?.error?.code;
  if (ok ? typeof answer.result?.token?.content !== 'string' : code !== 'INCORRECT_CREDENTIALS')
    throw new BenchError(`login of ${username}: ${JSON.stringify(answer)}`);
  return ms;
}

export default {
  describe:
    "A real user's login latency alone and during a storm of logins for made-up usernames (each on its own " +
    'connection), in rounds (medians reported); how long made-up usernames and wrong passwords take to be refused.',
  options: {
    storm: { default: 300, help: 'made-up-username logins sent at once' },
    rounds: { default: 3, help: 'storms to run' },
  },
  seed: (ctx) => seedUsers(ctx, 1, { prefix: 'stormbench' }),

  async load(ctx, { users: [user] }) {
    const { storm, rounds } = ctx.options;
    const host = await startHost(ctx);
    const real = () => login(host.url, user.username, PASSWORD, true);
    const madeUp = (name, password = PASSWORD) => login(host.url, name, password, false);
    await real();
    await madeUp('nobodywarmup');
    const [wrongPassword, unknown] = [[], []];
    for (let i = 0; i < QUIET_LOGINS; i++) {
      wrongPassword.push(await madeUp(user.username, 'Wrong-Passw0rd!'));
      unknown.push(await madeUp(`nobodyquiet${i}`));
    }
    const each = [];
    for (let round = 1; round <= rounds; round++) {
      ctx.progress(`round ${round}: ${QUIET_LOGINS} quiet logins, then a storm of ${storm}`);
      const quiet = [];
      for (let i = 0; i < QUIET_LOGINS; i++) quiet.push(await real());
      const end = await cpuWindow(host.pid);
      const started = performance.now();
      const refused = Array.from({ length: storm }, (_, i) => madeUp(`nobody${round}x${i}`));
      await sleep(HEAD_START_MS);
      const during = await real();
      const stormed = await Promise.all(refused);
      each.push({
        quietMs: median(quiet),
        duringMs: during,
        stormMs: performance.now() - started,
        unknownP50Ms: median(stormed),
        unknownMaxMs: Math.max(...stormed),
        cpu: await end(),
      });
    }
    const of = (key) => median(each.map((r) => r[key]));
    return {
      title: `${storm} made-up-username logins at once, ${rounds} round(s)`,
      rows: [
        ["real user's login, no storm", of('quietMs'), 'ms'],
        ["real user's login during the storm", of('duringMs'), 'ms', ['<', 2000]],
        ['storm: made-up usernames refused p50', of('unknownP50Ms'), 'ms'],
        ['storm: all refused after', of('stormMs'), 'ms'],
        ['quiet: wrong password refused', median(wrongPassword), 'ms'],
        ['quiet: made-up username refused', median(unknown), 'ms'],
      ],
      notes: ['Medians over the rounds; quiet refusals close to each other: time does not tell who exists.'],
      details: { rounds: each },
    };
  },
};
