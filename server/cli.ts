import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pino from 'pino';
import {
  ConfigError,
  defaultDataDir,
  DEFAULT_PORT,
  parseConfigOverrides,
  type ConfigOverrides,
} from './config.js';
import { createServer, keepServingAfterRejections, openHost, type HostServer } from './host.js';
import { RANK_NAMES, type Rank } from './protocol/enums.js';
import { COMMAND_LINE_ACTOR } from './protocol/audit.js';
import { appendStaffEntry, userTarget } from './services/audit-log.js';
import { AppError } from './errors.js';
import { BuildsUsageError, buildsCommand } from './cli-builds.js';
import { userResetPassword, UserUsageError } from './cli-users.js';
import { redactUrl } from '../shared/redact-url.js';
import { isLoopbackHost, OPEN_TO_LAN_HINT } from './protocol/host-info.js';
import { BUILT_UI_DIR } from '../shared/built-paths.js';

export { BUILT_UI_DIR };

const MAIN_HELP = `Hypernex Companion: a Hypernex-compatible host for your LAN.

Usage:
  hypernex-companion serve [options]        run the host without a window (API, socket and web UI)
  hypernex-companion user create [options]  create an account directly in a data folder
  hypernex-companion user reset-password     set a new password for an account in a data folder
  hypernex-companion test-game-server [opts] a stand-in game server that claims and readies instances
  hypernex-companion builds add|list|remove  client builds players download (launcher, game, CCK)
  hypernex-companion migrate --from DIR --database URL  move a data folder's records into PostgreSQL
  hypernex-companion <command> --help       options of a command
`;

const SERVE_HELP = `Usage: hypernex-companion serve [options]

Runs the host alone and prints "listening on http://HOST:PORT" once it accepts connections.

Options:
  --data-dir DIR             data folder (default: ${defaultDataDir()})
  --database URL             keep records in PostgreSQL (postgres://USER@HOST:PORT/DB; a password may come
                             from PGPASSWORD); the data folder then holds only uploaded files, and several
                             hosts on the same database may share it
  --redis URL                with --database: share sockets' events, presence, sign-outs and limits with the
                             other hosts on that database through Redis (redis://HOST:PORT/N)
  --host ADDR                address to bind (default: 127.0.0.1; 0.0.0.0 shares it on the LAN)
  --port N                   port (default: ${DEFAULT_PORT}; 0 picks a free one)
  --public-url URL           address LAN clients use, e.g. http://192.168.1.20:${DEFAULT_PORT}
  --config FILE              JSON file with any configuration keys (see README); flags win over it
  --token-lifetime-days N    login token lifetime (default: 30)
  --require-invite-code      sign-up needs an invite code
  --invite-code CODE         a valid invite code (repeatable)
  --allowed-domain HOST      image host allowed in URLs besides this host (repeatable; default i.imgur.com)
  --allowed-origin ORIGIN    web page origin allowed to use the API and socket besides this host's own addresses,
                             e.g. a dashboard's https://dashboard.example.com (repeatable; * allows any page)
  --trusted-proxy ADDR       address or range (10.0.0.0/8) of a proxy in front of this host, e.g. nginx: requests
                             from it count as coming from the X-Forwarded-For address it adds (repeatable)
  --game-server-token TOKEN  a token game servers may authenticate with (repeatable)
  --allow-any-game-server    accept any game server
  --no-ui                    serve only the API, not the web UI
  --log-level LEVEL          silent, error, warn, info or debug (default: info); logs go to stderr
  -h, --help                 this help
`;

const USER_CREATE_HELP = `Usage: hypernex-companion user create [options]

Creates an account in a data folder that no running host holds (stop the host first).

Options:
  --data-dir DIR      data folder (default: ${defaultDataDir()})
  --database URL      the PostgreSQL database of hosts started with --database (hosts may keep running)
  --username NAME     3-20 letters or digits, at most one underscore
  --password PASS     8+ characters with upper and lower case, a digit and a symbol
  --email EMAIL       email address
  --rank N            0 Guest .. 6 Owner (default: 2 Registered)
  -h, --help          this help
`;

class UsageError extends Error {}

function int(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^-?\d+$/.test(value))
    throw new UsageError(`--${name} must be a whole number, got ${JSON.stringify(value)}`);
  return Number(value);
}

async function serve(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'data-dir': { type: 'string' },
      database: { type: 'string' },
      redis: { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      'public-url': { type: 'string' },
      config: { type: 'string' },
      'token-lifetime-days': { type: 'string' },
      'require-invite-code': { type: 'boolean' },
      'invite-code': { type: 'string', multiple: true },
      'allowed-domain': { type: 'string', multiple: true },
      'allowed-origin': { type: 'string', multiple: true },
      'trusted-proxy': { type: 'string', multiple: true },
      'allow-any-game-server': { type: 'boolean' },
      'game-server-token': { type: 'string', multiple: true },
      'no-ui': { type: 'boolean' },
      'log-level': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(SERVE_HELP);
    return 0;
  }
  let overrides: ConfigOverrides = {};
  if (values.config) {
    let json: unknown;
    try {
      json = JSON.parse(await readFile(values.config, 'utf8'));
    } catch (error) {
      throw new UsageError(`cannot read --config ${values.config}: ${(error as Error).message}`);
    }
    // A mistyped key or a value of the wrong type stops startup, naming it, instead of being ignored.
    try {
      overrides = parseConfigOverrides(json, `--config ${values.config}`);
    } catch (error) {
      throw error instanceof ConfigError ? new UsageError(error.message) : error;
    }
  }
  const port = int('port', values.port);
  if (port !== undefined && (port < 0 || port > 65535)) throw new UsageError('--port must be 0..65535');
  const days = int('token-lifetime-days', values['token-lifetime-days']);
  if (days !== undefined && days < 1) throw new UsageError('--token-lifetime-days must be at least 1');
  const level = values['log-level'];
  if (level !== undefined && !['silent', 'error', 'warn', 'info', 'debug'].includes(level)) {
    throw new UsageError('--log-level must be silent, error, warn, info or debug');
  }
  const merged: ConfigOverrides = {
    uiDir: values['no-ui'] ? null : BUILT_UI_DIR,
    ...overrides,
    ...(values['data-dir'] !== undefined && { dataDir: resolve(values['data-dir']) }),
    ...(values.database !== undefined && { database: values.database }),
    ...(values.redis !== undefined && { redis: values.redis }),
    ...(values.host !== undefined && { host: values.host }),
    ...(port !== undefined && { port }),
    ...(values['public-url'] !== undefined && { publicUrl: values['public-url'] }),
    ...(days !== undefined && { tokenLifetimeSeconds: days * 86_400 }),
    ...(values['require-invite-code'] && { requireInviteCode: true }),
    ...(values['invite-code'] && { globalInviteCodes: values['invite-code'] }),
    ...(values['allowed-domain'] && { allowedDomains: values['allowed-domain'] }),
    ...(values['allowed-origin'] && { allowedOrigins: values['allowed-origin'] }),
    ...(values['trusted-proxy'] && { trustedProxies: values['trusted-proxy'] }),
    ...(values['allow-any-game-server'] && { allowAnyGameServer: true }),
    ...(values['game-server-token'] && { gameServerTokens: values['game-server-token'] }),
    ...(level !== undefined && { logLevel: level as ConfigOverrides['logLevel'] }),
  };
  const logger = pino(
    { level: process.env.HYPERNEX_LOG_LEVEL ?? merged.logLevel ?? 'info', base: undefined },
    pino.destination(2),
  );
  // Listen for signals before starting, so a stop that arrives during startup still shuts down cleanly.
  let stopRequested!: () => void;
  const stopped = new Promise<void>((resolveStop) => (stopRequested = resolveStop));
  const onSignal = (): void => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    // A second signal while closing ends the process at once.
    process.once('SIGINT', () => process.exit(130));
    process.once('SIGTERM', () => process.exit(143));
    stopRequested();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  keepServingAfterRejections(logger);
  let server: HostServer;
  try {
    server = await createServer(merged, { logger });
  } catch (error) {
    // A refused start (a bad data file, a folder in use) goes to main, which prints it and exits 1; the signal
    // handlers of a host that never ran must not outlive it (they would swallow the first SIGINT of an embedder).
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    throw error;
  }
  // One write, so a reader that sees the "listening on" line sees the rest with it; "data folder" comes last.
  process.stdout.write(`listening on ${server.url}\n${hostInfo(server)}`);
  await stopped;
  await server.close();
  return 0;
}

function hostInfo(server: HostServer): string {
  let out = '';
  for (const url of server.lanUrls) out += `LAN address: ${url}\n`;
  if (isLoopbackHost(server.config.host)) out += `${OPEN_TO_LAN_HINT}\n`;
  if (server.setupSecret) {
    out +=
      `first run: no owner yet. Create the owner account with this one-time setup secret:\n` +
      `setup secret: ${server.setupSecret}\n` +
      `or open ${server.url}/#setup=${server.setupSecret} on this machine\n`;
  }
  if (server.config.database !== null) out += `database: ${redactUrl(server.config.database)}\n`;
  if (server.config.redis !== null) out += `redis: ${redactUrl(server.config.redis)}\n`;
  return `${out}data folder: ${server.config.dataDir}\n`;
}

async function userCreate(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'data-dir': { type: 'string' },
      database: { type: 'string' },
      username: { type: 'string' },
      password: { type: 'string' },
      email: { type: 'string' },
      rank: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(USER_CREATE_HELP);
    return 0;
  }
  for (const key of ['username', 'password', 'email'] as const) {
    if (values[key] === undefined) throw new UsageError(`--${key} is required`);
  }
  const rank = int('rank', values.rank) ?? 2;
  if (rank < 0 || rank > 6) throw new UsageError('--rank must be 0..6');
  const host = await openHost(
    { dataDir: resolve(values['data-dir'] ?? defaultDataDir()), database: values.database ?? null },
    { logger: pino({ level: 'silent' }) },
  );
  try {
    const { user } = await host.accounts.createUser(
      {
        username: values.username as string,
        password: values.password as string,
        email: values.email as string,
      },
      {
        rank: rank as Rank,
        skipInviteCode: true,
        // In the audit log, in the account's own commit: made from the command line, with its rank.
        inTx: (t, made) =>
          appendStaffEntry(t, host, COMMAND_LINE_ACTOR, 'createuser', userTarget(made), { rank }),
      },
    );
    if (rank === 6) await host.setup.markDone();
    process.stdout.write(
      `created user ${user.Username} ${user.Id} rank ${rank} (${RANK_NAMES[rank as Rank]})\n`,
    );
    return 0;
  } finally {
    await host.close();
  }
}

const GAME_SERVER_HELP = `Usage: hypernex-companion test-game-server --url URL [options]

Connects to a host as a game server, claims every instance request and readies it, and prints what it receives.
For trying the instance and invite flow on a LAN without the real Hypernex game server.

Options:
  --url URL      the host, e.g. http://192.168.1.20:${DEFAULT_PORT}
  --token TOKEN  a game-server token of the host (none needed when the host allows any game server)
  --uri HOST:PORT  what players are told to connect to (default 127.0.0.1:7777)
  -h, --help     this help
`;

async function testGameServer(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      url: { type: 'string' },
      token: { type: 'string' },
      uri: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(GAME_SERVER_HELP);
    return 0;
  }
  if (!values.url) throw new UsageError('--url is required');
  const { TestGameServer } = await import('./tools/test-game-server.js');
  const server = await TestGameServer.connect({
    url: values.url,
    serverToken: values.token ?? '',
    uri: values.uri,
  });
  process.stdout.write(`connected as ${server.gameServerId}\n`);
  server.on('message', (m) => process.stdout.write(`${m.message} ${JSON.stringify(m.result)}\n`));
  const code = await new Promise<number>((resolve) => {
    server.on('close', (closeCode) => resolve(closeCode === 1000 ? 0 : 1));
    process.once('SIGINT', () => {
      server.close();
      resolve(0);
    });
    process.once('SIGTERM', () => {
      server.close();
      resolve(0);
    });
  });
  return code;
}

export async function main(argv: string[]): Promise<number> {
  const [command, sub, ...rest] = argv;
  try {
    if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
      process.stdout.write(MAIN_HELP);
      return command === undefined ? 1 : 0;
    }
    if (command === 'serve') return await serve(argv.slice(1));
    if (command === 'user' && sub === 'create') return await userCreate(rest);
    if (command === 'user' && sub === 'reset-password') return await userResetPassword(rest);
    if (command === 'test-game-server') return await testGameServer(argv.slice(1));
    if (command === 'builds') return await buildsCommand(argv.slice(1));
    // Loaded only here: the PostgreSQL client is not needed by the other commands.
    if (command === 'migrate') return await (await import('./cli-migrate.js')).migrateCommand(argv.slice(1));
    if (command === 'user') {
      process.stdout.write(USER_CREATE_HELP);
      return sub === '--help' || sub === '-h' ? 0 : 1;
    }
    process.stderr.write(`unknown command ${JSON.stringify(command)}\n\n${MAIN_HELP}`);
    return 1;
  } catch (error) {
    if (error instanceof AppError) {
      const fields = error.fields ? ` (${Object.values(error.fields).join('; ')})` : '';
      process.stderr.write(`error: ${error.message}${fields}\n`);
    } else if (
      error instanceof UsageError ||
      error instanceof BuildsUsageError ||
      error instanceof UserUsageError ||
      (error as Error | null)?.name === 'MigrateUsageError' ||
      (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
    ) {
      process.stderr.write(`error: ${(error as Error).message}\nsee --help\n`);
    } else {
      process.stderr.write(`error: ${(error as Error).message}\n`);
    }
    return 1;
  }
}

export const PACKAGE_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
