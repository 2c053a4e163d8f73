import type { ServiceDeps } from '../context.js';
import type { InviteCodes } from '../invite-codes.js';
import type { FailureThrottle } from '../limits.js';

export type AccountsDeps = ServiceDeps & {
  localHosts: () => string[];
  inviteCodes: InviteCodes;
  /** Whether sign-up needs an invite code right now (a host setting the owner can change). */
  requireInviteCode: () => Promise<boolean>;
};

/** What every part of the accounts service shares: its dependencies and the wrong-password throttles. */
export interface AccountsShared {
  deps: AccountsDeps;
  /** Wrong passwords per username and address (sign-in), and per user (confirmations). */
  throttle: FailureThrottle;
  /** Wrong passwords per username from anywhere, at a tenth of the pace of `throttle`. */
  accountThrottle: FailureThrottle;
}

export function createAccountsShared(deps: AccountsDeps): AccountsShared {
  const { config } = deps;
  return {
    deps,
    // Shared by every host process of the community, so another process behind the proxy is no way around it.
    throttle: deps.limits.throttle('login', {
      maxFailures: config.limits.loginFailures,
      windowSeconds: config.limits.loginFailureWindowSeconds,
    }),
    accountThrottle: deps.limits.throttle('login-account', {
      maxFailures: config.limits.loginFailures * 10,
      windowSeconds: config.limits.loginFailureWindowSeconds,
    }),
  };
}
