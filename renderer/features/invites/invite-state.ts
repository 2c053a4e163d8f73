import {
  InviteRequestState,
  type GotInviteRequestResult,
  type InviteRequestDto,
} from '../../../server/protocol/socket.js';

/** The state to show now: an open request past its expiry reads as expired before the host says so. */
export function effectiveState(request: InviteRequestDto, nowMs: number): InviteRequestState {
  const open = request.state === InviteRequestState.New || request.state === InviteRequestState.Seen;
  return open && nowMs >= request.expiresAt * 1000 ? InviteRequestState.Expired : request.state;
}

export function isOpen(request: InviteRequestDto, nowMs: number): boolean {
  const state = effectiveState(request, nowMs);
  return state === InviteRequestState.New || state === InviteRequestState.Seen;
}

/** A live `gotinviterequest` as a history entry, the way the host stores it. */
export function fromLiveRequest(event: GotInviteRequestResult, toUserId: string): InviteRequestDto {
  return {
    requestId: event.requestId,
    fromUserId: event.fromUserId,
    fromUsername: event.fromUsername,
    toUserId,
    sentAt: event.sentAt,
    expiresAt: event.expiresAt,
    state: InviteRequestState.New,
    updatedAt: event.sentAt,
  };
}

/**
 * Merges requests into a list, newest first. For one id the later `updatedAt` wins; on a tie the incoming one
 * does, except that an incoming "new" never undoes a state change we already know of.
 */
export function mergeRequests(list: InviteRequestDto[], incoming: InviteRequestDto[]): InviteRequestDto[] {
  const byId = new Map(list.map((r) => [r.requestId, r]));
  for (const next of incoming) {
    const known = byId.get(next.requestId);
    const keepKnown =
      known !== undefined &&
      (known.updatedAt > next.updatedAt ||
        (known.updatedAt === next.updatedAt &&
          next.state === InviteRequestState.New &&
          known.state !== InviteRequestState.New));
    if (!keepKnown) byId.set(next.requestId, next);
  }
  return [...byId.values()].sort((a, b) => b.sentAt - a.sentAt || b.requestId.localeCompare(a.requestId));
}

export const STATE_LABELS: Record<InviteRequestState, string> = {
  new: 'New',
  seen: 'Seen',
  answered: 'Answered',
  dismissed: 'Dismissed',
  expired: 'Expired',
};
