import { Rank } from '../../server/protocol/enums.js';

/**
 * Ranks as people read them. The wire names (server/protocol/enums.ts RANK_NAMES) are the Hypernex protocol's;
 * one of them, "Incompleter" (1), is the real server's word for an account whose email is not confirmed yet.
 */
const RANK_LABELS: Record<Rank, string> = {
  [Rank.Guest]: 'Guest',
  [Rank.Incompleter]: 'Email not confirmed',
  [Rank.Registered]: 'Registered',
  [Rank.Verified]: 'Verified',
  [Rank.Moderator]: 'Moderator',
  [Rank.Admin]: 'Admin',
  [Rank.Owner]: 'Owner',
};

export function rankLabel(rank: number): string {
  return RANK_LABELS[rank as Rank] ?? `Rank ${rank}`;
}
