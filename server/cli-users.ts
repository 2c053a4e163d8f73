import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { defaultDataDir } from './config.js';
import { openHost } from './host.js';
import { COMMAND_LINE_ACTOR } from './protocol/audit.js';
import { appendStaffEntry, userTarget } from './services/audit-log.js';

export const USER_RESET_PASSWORD_HELP = `Usage: hypernex-companion user reset-password [options]

Sets a new password for an account in a data folder that no running host holds (stop the host first), and signs
that account out everywhere. For the owner at the host machine; in a running host, the owner and admins use the
Moderation screen (users ranked below them).

Options:
  --data-dir DIR      data folder (default: ${defaultDataDir()})
  --database URL      the PostgreSQL database of hosts started with --database
  --redis URL         with --database: the Redis those hosts share, so the account's open sockets on every
                      running host close at once (without it they stay open until they reconnect)
  --username NAME     the account's username (or --user-id ID)
  --user-id ID        the account's id
  --password PASS     the new password: 8+ characters with upper and lower case, a digit and a symbol
  -h, --help          this help
`;

export class UserUsageError extends Error {}

/** `user reset-password`: the owner's way back into a host whose password they forgot. */
export async function userResetPassword(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'data-dir': { type: 'string' },
      database: { type: 'string' },
      redis: { type: 'string' },
      username: { type: 'string' },
      'user-id': { type: 'string' },
      password: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(USER_RESET_PASSWORD_HELP);
    return 0;
  }
  if (values.password === undefined) throw new UserUsageError('--password is required');
  if ((values.username === undefined) === (values['user-id'] === undefined)) {
    throw new UserUsageError('give one of --username or --user-id');
  }
  const host = await openHost(
    {
      dataDir: resolve(values['data-dir'] ?? defaultDataDir()),
      database: values.database ?? null,
      redis: values.redis ?? null,
    },
    { logger: pino({ level: 'silent' }) },
  );
  try {
    const user = await (values.username !== undefined
      ? host.users.byUsername(values.username)
      : host.users.get(values['user-id'] as string));
    if (!user) throw new UserUsageError('no account has that username or id in this data folder');
    // In the audit log, in the change's own commit: whose, from the command line (never the password).
    await host.accounts.changePassword(user, values.password, (t) =>
      appendStaffEntry(t, host, COMMAND_LINE_ACTOR, 'resetpassword', userTarget(user), {}),
    );
    process.stdout.write(
      `reset the password of ${user.Username} ${user.Id}; their sessions were signed out\n`,
    );
    return 0;
  } finally {
    await host.close();
  }
}
