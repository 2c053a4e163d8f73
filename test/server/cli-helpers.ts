import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../bin/hypernex-companion.js', import.meta.url));
const BUILT = fileURLToPath(new URL('../../dist/server/cli.js', import.meta.url));

export function assertBuilt(): void {
  if (!existsSync(BUILT))
    throw new Error('dist/ is missing: run `npm run build` before these tests (npm test does).');
}

export interface Served {
  proc: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
}

/** Starts `hypernex-companion serve` and resolves at its "listening on" line. */
export function spawnServe(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Served> {
  assertBuilt();
  const proc = spawn(
    process.execPath,
    [BIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--no-ui', ...args],
    {
      env: { ...process.env, HYPERNEX_LOG_LEVEL: 'error', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  proc.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start in time: ${err}`)), 20_000);
    proc.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match && /^data folder: /m.test(out)) {
        clearTimeout(timer);
        resolve({ proc, url: match[1]!, stdout: () => out, stderr: () => err });
      }
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}: ${err}`));
    });
  });
}

export function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  assertBuilt();
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, HYPERNEX_LOG_LEVEL: 'error' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    proc.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** `user create` on a community (`--data-dir`, `--database`): `<username>@example.com`, with `rank`. */
export function createUserCli(
  dir: string,
  database: string,
  account: { username: string; password: string; rank: number },
): ReturnType<typeof runCli> {
  const { username, password, rank } = account;
  return runCli([
    ...['user', 'create', '--data-dir', dir, '--database', database],
    ...['--username', username, '--password', password],
    ...['--email', `${username}@example.com`, '--rank', String(rank)],
  ]);
}

export async function stop(served: Served, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (served.proc.exitCode !== null || served.proc.signalCode !== null) return served.proc.exitCode;
  return new Promise((resolve) => {
    served.proc.once('exit', (code) => resolve(code));
    served.proc.kill(signal);
  });
}

export async function postJson(
  url: string,
  path: string,
  body: unknown,
): Promise<{ success: boolean; message: string; result?: Record<string, unknown> }> {
  const res = await fetch(`${url}/api/v1/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return (await res.json()) as { success: boolean; message: string; result?: Record<string, unknown> };
}

/** An account made through a served host's API, with its sign-up token. */
export interface ServedAccount {
  id: string;
  token: string;
  username: string;
}

/** Signs `username` up through the served host `on` (the test password, `<username>@example.com`). */
export async function signUpServed(on: Served, username: string, password: string): Promise<ServedAccount> {
  const answer = await postJson(on.url, 'createUser', {
    username,
    password,
    email: `${username}@example.com`,
  });
  if (!answer.success) throw new Error(`sign-up of ${username} failed: ${answer.message}`);
  const data = answer.result!.UserData as { Id: string; AccountTokens: Array<{ content: string }> };
  return { id: data.Id, token: data.AccountTokens[0]!.content, username };
}

/** Signs `username` in through the served host `on`: its id and a new token. */
export async function signInServed(on: Served, username: string, password: string): Promise<ServedAccount> {
  const login = await postJson(on.url, 'login', { username, password });
  if (!login.success) throw new Error(`sign-in of ${username} failed: ${login.message}`);
  const token = (login.result!.token as { content: string }).content;
  const found = await postJson(on.url, 'getUser', { username, tokenContent: token });
  return { id: (found.result!.UserData as { Id: string }).Id, token, username };
}

/** A request body as `account`, with `fields`. */
export const asAccount = (account: ServedAccount, fields: Record<string, unknown> = {}) => ({
  userid: account.id,
  tokenContent: account.token,
  ...fields,
});
