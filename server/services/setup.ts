import { timingSafeEqual } from 'node:crypto';
import { ErrorCode } from '../protocol/errors.js';
import { Rank } from '../protocol/enums.js';
import type { SetupOwnerRequest } from '../protocol/schemas.js';
import { AppError } from '../errors.js';
import type { StoredUser } from '../store/users.js';
import type { TokenDto } from '../protocol/types.js';
import type { AccountsService } from './accounts.js';
import type { ServiceDeps } from './context.js';
import { sha256 } from './secrets.js';
import {
  HOST,
  hostSettings,
  SETTINGS,
  updateHostSettings,
  type HostSettingsRecord,
} from '../store/settings.js';

/**
 * First-run owner bootstrap (SPEC section 2). While no owner exists, the host holds a one-time setup secret in
 * memory only and shows it on the host machine (desktop window, CLI output). Whoever presents it creates the
 * Owner account; "first caller wins" over the LAN never applies.
 */
export function createSetupService(
  deps: Pick<ServiceDeps, 'store' | 'users' | 'ids'> & { accounts: AccountsService },
) {
  const { store, users, ids, accounts } = deps;
  let secret: string | null = null;

  /** Only at start, for a folder whose settings predate `ownerSetupDone`. */
  async function ownerExists(): Promise<boolean> {
    for await (const user of users.scan()) if (user.Rank === Rank.Owner) return true;
    return false;
  }

  async function closeIfDone(): Promise<void> {
    if ((await hostSettings(store).catch(() => null))?.ownerSetupDone) secret = null;
  }

  async function markDone(): Promise<void> {
    secret = null;
    if (!(await hostSettings(store)).ownerSetupDone) {
      await store.tx((t) => updateHostSettings(t, store, { ownerSetupDone: true }));
    }
  }

  return {
    /** Prepares the secret if setup is still needed; returns it (or null when an owner exists). */
    async init(): Promise<string | null> {
      if ((await hostSettings(store)).ownerSetupDone || (await ownerExists())) {
        await markDone();
        return null;
      }
      secret = ids.secret();
      // An owner made through another host on the database closes setup here too.
      store.watch(SETTINGS, (id) => {
        if (secret !== null && (id === HOST || id === null)) closeIfDone().catch(() => undefined);
      });
      return secret;
    },
    get secret(): string | null {
      return secret;
    },
    needsSetup(): boolean {
      return secret !== null;
    },
    async setupOwner(input: SetupOwnerRequest): Promise<{ user: StoredUser; token: TokenDto }> {
      if (secret === null) {
        throw new AppError(ErrorCode.SETUP_ALREADY_DONE, 'This host already has an owner. Sign in instead.');
      }
      if (!timingSafeEqual(sha256(secret), sha256(input.setupSecret.trim()))) {
        throw new AppError(
          ErrorCode.INVALID_SETUP_SECRET,
          'That setup secret is not right. Copy it from the host.',
          {
            setupSecret: 'does not match the secret the host shows',
          },
        );
      }
      const created = await accounts.createUser(
        { username: input.username, password: input.password, email: input.email },
        // The owner and "setup done" are one commit: a crash cannot leave an owner with the secret still open.
        {
          rank: Rank.Owner,
          skipInviteCode: true,
          inTx: async (t) => {
            // Another host on the database (each shows a secret of its own) may have made the owner meanwhile.
            if ((await t.repo<HostSettingsRecord>(SETTINGS).get(HOST))?.ownerSetupDone) {
              secret = null;
              throw new AppError(
                ErrorCode.SETUP_ALREADY_DONE,
                'This host already has an owner. Sign in instead.',
              );
            }
            await updateHostSettings(t, store, { ownerSetupDone: true });
          },
        },
      );
      secret = null;
      return created;
    },
    /** Called when an owner was created another way (CLI). */
    markDone,
  };
}

export type SetupService = ReturnType<typeof createSetupService>;
