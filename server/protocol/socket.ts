import type { PublicUserDto } from './types.js';

/**
 * Socket message names and payloads. Clients send `{userId, tokenContent, message, args}` (names compared
 * case-insensitively; HypernexSharp sends PascalCase); the server sends `{message, result}` with lowercase names.
 */

export const ClientMessage = {
  auth: 'auth',
  requestInvite: 'requestinvite',
  shareAvatarToken: 'shareavatartoken',
} as const;

export const ServerMessage = {
  /** Our addition: the socket is now verified for this user (the real server sends nothing). */
  authenticated: 'authenticated',
  /** Our addition: the token did not verify; the socket stays open and unverified. */
  authFailed: 'authfailed',
  /** Our addition: a message could not be used (not JSON, not an object, no name, over the rate limit). */
  error: 'error',
  gotInviteRequest: 'gotinviterequest',
  /** Our addition: the sender's request was delivered. */
  sentInviteRequest: 'sentinviterequest',
  /** Our addition: the sender's request was refused, with a reason. */
  failedToRequestInvite: 'failedtorequestinvite',
  /** Our addition: one of the user's sockets changed an invite request (seen, dismissed, answered). */
  inviteRequestUpdated: 'inviterequestupdated',
  /** Our addition: a friend's visible status changed (status set, came online, went offline). */
  friendStatus: 'friendstatus',
  /** To the target and the sender of a shareavatartoken that went through (reference 8.4). */
  sharedAvatarToken: 'sharedavatartoken',
  /** To the sender of a refused shareavatartoken; `reason` is our addition. */
  failedToShareAvatarToken: 'failedtoshareavatartoken',
  /** Our addition: the sender's invite request was seen, answered, dismissed or expired (`request`). */
  sentInviteRequestUpdated: 'sentinviterequestupdated',
  /** Our addition, to both sides' sockets: a friend request was sent (SocialPushResult). */
  friendRequest: 'friendrequest',
  /** Our addition, to both sides: a friend request was accepted; the two are friends now. */
  friendAccepted: 'friendaccepted',
  /**
   * Our addition, to both sides: a friend request ended unanswered, declined by its target
   * (`action: 'declineFriendRequest'`) or withdrawn by its sender (`action: 'cancelFriendRequest'`).
   */
  friendDeclined: 'frienddeclined',
  /** Our addition, to both sides: a friendship ended (removed, or a block ended it). */
  friendRemoved: 'friendremoved',
  /** Our addition, to the actor's sockets only: they blocked or unblocked someone. */
  blockChanged: 'blockchanged',
  /**
   * Our addition (issue 28), to the user's own sockets: a moderator changed their rank, badges, warning or ban
   * (AccountChangedResult), on this host or another, so screens appear and disappear without a reload.
   */
  accountChanged: 'accountchanged',
  /** Our addition (issue 28), to moderators' sockets: a "remove all content" job moved on (ContentJobDto). */
  contentJobProgress: 'contentjobprogress',
} as const;

/**
 * The result of friendrequest / friendaccepted / frienddeclined / friendremoved / blockchanged: who acted
 * (`fromUserId`), on whom (`targetUserId`), and `user`, the public view of the other side from the receiver's
 * point of view, so a screen shows the name without asking.
 */
export interface SocialPushResult {
  action: string;
  fromUserId: string;
  targetUserId: string;
  user: PublicUserDto;
}

/** `sharedavatartoken` as the real server sends it. */
export interface SharedAvatarTokenDto {
  fromUserId: string;
  targetUserId: string;
  avatarId: string;
  avatarToken: string;
}

/** Why a shareavatartoken was refused (`failedtoshareavatartoken.reason`). */
export const ShareAvatarRefusal = {
  /** targetUserId, avatarId or avatarToken missing or not a string. */
  INVALID_ARGS: 'INVALID_ARGS',
  SELF: 'SELF',
  UNKNOWN_USER: 'UNKNOWN_USER',
  UNKNOWN_AVATAR: 'UNKNOWN_AVATAR',
  /** The avatar is someone else's. */
  NOT_OWNER: 'NOT_OWNER',
  /** Not a live asset token of that avatar (manageAssetToken makes them). */
  INVALID_ASSET_TOKEN: 'INVALID_ASSET_TOKEN',
  /** The target blocked the sender. */
  BLOCKED: 'BLOCKED',
  /** The target has no open socket. */
  OFFLINE: 'OFFLINE',
} as const;
export type ShareAvatarRefusal = (typeof ShareAvatarRefusal)[keyof typeof ShareAvatarRefusal];

/** The reason of a 4001 close (the user's token stopped verifying), so a client can say why. */
export const RevokedReason = {
  BANNED: 'banned',
  WARNED: 'warned',
  /** Expired, signed out, or the password changed. */
  TOKEN: 'token expired or revoked',
} as const;

export interface ClientEnvelope {
  userId?: unknown;
  /** Game servers send these instead of userId (reference 8.2). */
  gameServerId?: unknown;
  serverTokenContent?: unknown;
  tokenContent?: unknown;
  message?: unknown;
  args?: unknown;
}

export interface ServerEnvelope<R = Record<string, unknown>> {
  message: string;
  result: R;
}

export const InviteRefusal = {
  /** No user has that id. */
  UNKNOWN_USER: 'UNKNOWN_USER',
  SELF: 'SELF',
  /** The target does not have you as a friend (also when either blocked the other: blocks end friendships). */
  NOT_FRIENDS: 'NOT_FRIENDS',
  /** The target has no open socket, or appears Offline. */
  OFFLINE: 'OFFLINE',
  DO_NOT_DISTURB: 'DO_NOT_DISTURB',
  /** You asked this user too recently; `retryAfter` says when you may ask again. */
  RATE_LIMITED: 'RATE_LIMITED',
  INVALID_ARGS: 'INVALID_ARGS',
  /** The host could not save the request (its disk is full or failing); the target may have seen it live. */
  NOT_SAVED: 'NOT_SAVED',
  /**
   * The target is connected to another host of the community, and the request could not be handed to it in time
   * (Redis, which the hosts talk through, is down or hung): nothing was saved, and you may ask again at once.
   */
  TARGET_UNREACHABLE: 'TARGET_UNREACHABLE',
} as const;
export type InviteRefusal = (typeof InviteRefusal)[keyof typeof InviteRefusal];

export const InviteRequestState = {
  New: 'new',
  Seen: 'seen',
  Answered: 'answered',
  Dismissed: 'dismissed',
  Expired: 'expired',
} as const;
export type InviteRequestState = (typeof InviteRequestState)[keyof typeof InviteRequestState];

export interface InviteRequestDto {
  requestId: string;
  fromUserId: string;
  fromUsername: string;
  toUserId: string;
  /** Unix seconds. */
  sentAt: number;
  expiresAt: number;
  state: InviteRequestState;
  /** Unix seconds of the last state change. */
  updatedAt: number;
}

/** A request you sent, as `sentInviteRequests` and `sentinviterequestupdated` give it. */
export interface SentInviteRequestDto extends InviteRequestDto {
  toUsername: string;
}

export interface GotInviteRequestResult {
  fromUserId: string;
  requestId: string;
  fromUsername: string;
  sentAt: number;
  expiresAt: number;
}

export interface FailedToRequestInviteResult {
  targetUserId: string;
  reason: InviteRefusal;
  retryAfter?: number;
}

export interface FriendStatusResult {
  userId: string;
  /** The status others see: 0 (Offline) while the user has no socket. */
  Status: number;
  StatusText: string;
}

/*
 * The two messages every invite request sends, built as text directly: on the socket's hot path JSON.stringify of
 * the envelope object cost twice as much as this (Node 20). The output is byte for byte what
 * JSON.stringify({message, result}) gives (tested); numbers are whole seconds.
 */

/** `{"message":"gotinviterequest","result":{...}}` */
export function gotInviteRequestJson(r: GotInviteRequestResult): string {
  return (
    `{"message":"gotinviterequest","result":{"fromUserId":${jsonString(r.fromUserId)},` +
    `"requestId":${jsonString(r.requestId)},"fromUsername":${jsonString(r.fromUsername)},` +
    `"sentAt":${jsonNumber(r.sentAt)},"expiresAt":${jsonNumber(r.expiresAt)}}}`
  );
}

/** `{"message":"sentinviterequest","result":{"targetUserId":...,"requestId":...}}` */
export function sentInviteRequestJson(targetUserId: string, requestId: string): string {
  return (
    `{"message":"sentinviterequest","result":{"targetUserId":${jsonString(targetUserId)},` +
    `"requestId":${jsonString(requestId)}}}`
  );
}

/** Characters JSON.stringify never escapes (it escapes quotes, backslashes, controls and lone surrogates). */
// eslint-disable-next-line no-control-regex -- the control characters are what JSON must escape
const PLAIN_JSON_STRING = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/;

/** A string as JSON.stringify writes it; ids and names, which need no escapes, in half the time. */
export function jsonString(s: string): string {
  return PLAIN_JSON_STRING.test(s) ? `"${s}"` : JSON.stringify(s);
}

/** A number as JSON writes it (non-finite numbers are null). */
export function jsonNumber(n: number): string {
  return Number.isFinite(n) ? String(n) : 'null';
}
