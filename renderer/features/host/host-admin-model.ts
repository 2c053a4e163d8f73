import type { InviteCodeDto } from '../../../server/protocol/host-info.js';
import { INVITE_CODE_MAX_USES } from '../../../server/protocol/schemas.js';

/** The Host screen's administration cards as plain data (issue 18); pure, so tests run it in Node. */

export type InviteCodeState = 'active' | 'usedUp' | 'expired' | 'revoked';

export const INVITE_STATE_LABELS: Record<InviteCodeState, string> = {
  active: 'Active',
  usedUp: 'Used up',
  expired: 'Expired',
  revoked: 'Revoked',
};

/** Why a code can or cannot be used now (revoked wins, then used up, then expired). */
export function inviteCodeState(code: InviteCodeDto, nowSeconds: number): InviteCodeState {
  if (code.revoked) return 'revoked';
  if (code.maxUses > 0 && code.uses.length >= code.maxUses) return 'usedUp';
  if (code.expiresAt !== 0 && code.expiresAt <= nowSeconds) return 'expired';
  return 'active';
}

/** "Used 2 of 5 times", "Used once, no limit", "Single use, unused". */
export function usesText(code: InviteCodeDto): string {
  const used = code.uses.length;
  const times = used === 1 ? 'once' : `${used} times`;
  if (code.maxUses === 0) return used === 0 ? 'Unused, no limit' : `Used ${times}, no limit`;
  if (code.maxUses === 1) return used === 0 ? 'Single use, unused' : 'Single use, used';
  return `Used ${used} of ${code.maxUses} times`;
}

export type UsesChoice = 'once' | 'count' | 'unlimited';

export const EXPIRY_CHOICES: ReadonlyArray<{ value: number; label: string }> = [
  { value: 3600, label: 'In 1 hour' },
  { value: 86_400, label: 'In 1 day' },
  { value: 7 * 86_400, label: 'In 7 days' },
  { value: 30 * 86_400, label: 'In 30 days' },
  { value: 0, label: 'Never' },
];

/** The field's problem for "a number of uses", or undefined when it is a whole number the host takes. */
export function usesCountProblem(text: string): string | undefined {
  const value = text.trim();
  if (!/^\d+$/.test(value)) return 'Enter a whole number of sign-ups, e.g. 10';
  const n = Number(value);
  if (n < 2) return 'For one sign-up choose “Once”';
  if (n > INVITE_CODE_MAX_USES)
    return `At most ${INVITE_CODE_MAX_USES.toLocaleString('en-US')}; above that choose “No limit”`;
  return undefined;
}

/** What createInviteCode gets for the chosen uses. */
export function maxUsesOf(choice: UsesChoice, count: string): number {
  return choice === 'once' ? 1 : choice === 'unlimited' ? 0 : Number(count.trim());
}
