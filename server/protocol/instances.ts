/** Instance enums and wire shapes (reference sections 8.4 to 8.6). */

export const InstancePublicity = {
  Anyone: 0,
  Acquaintances: 1,
  Friends: 2,
  OpenRequest: 3,
  ModeratorRequest: 4,
  ClosedRequest: 5,
} as const;
export type InstancePublicity = (typeof InstancePublicity)[keyof typeof InstancePublicity];

export const InstanceProtocol = { KCP: 0, TCP: 1, UDP: 2 } as const;
export type InstanceProtocol = (typeof InstanceProtocol)[keyof typeof InstanceProtocol];

/** Unknown publicity values become ClosedRequest, unknown protocols KCP, as on the real server. */
export function toPublicity(value: unknown): InstancePublicity {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 5
    ? (value as InstancePublicity)
    : InstancePublicity.ClosedRequest;
}
export function toProtocol(value: unknown): InstanceProtocol {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 2
    ? (value as InstanceProtocol)
    : InstanceProtocol.KCP;
}

/** The full instance object (`updatedinstance {instanceMeta}`), field names as the real server. */
export interface InstanceMeta {
  Readied: boolean;
  Uri: string;
  GameServerId: string;
  TemporaryId: string;
  InstanceId: string;
  WorldId: string;
  InstancePublicity: InstancePublicity;
  InstanceProtocol: InstanceProtocol;
  InstanceCreatorId: string;
  InvitedUsers: string[];
  BannedUsers: string[];
  ConnectedUsers: string[];
  Moderators: string[];
}

export interface SafeInstance {
  GameServerId: string;
  InstanceId: string;
  InstanceCreatorId: string;
  InstancePublicity: InstancePublicity;
  InstanceProtocol: InstanceProtocol;
  ConnectedUsers: string[];
  WorldId: string;
}

/** Reasons we add to failedto* replies (the real server gives none). */
export const InstanceRefusal = {
  UNKNOWN_WORLD: 'UNKNOWN_WORLD',
  NOT_ALLOWED: 'NOT_ALLOWED',
  NO_GAME_SERVER: 'NO_GAME_SERVER',
  TIMED_OUT: 'TIMED_OUT',
  UNKNOWN_INSTANCE: 'UNKNOWN_INSTANCE',
  NOT_READY: 'NOT_READY',
  ALREADY_IN_INSTANCE: 'ALREADY_IN_INSTANCE',
  NOT_IN_INSTANCE: 'NOT_IN_INSTANCE',
  BANNED_FROM_INSTANCE: 'BANNED_FROM_INSTANCE',
  NOT_WELCOME: 'NOT_WELCOME',
  UNKNOWN_USER: 'UNKNOWN_USER',
  NOT_FRIENDS: 'NOT_FRIENDS',
  OFFLINE: 'OFFLINE',
  DO_NOT_DISTURB: 'DO_NOT_DISTURB',
  INVALID_ARGS: 'INVALID_ARGS',
  /**
   * The game server is connected to another host of the community, and the message could not be handed to it in
   * time (Redis, which the hosts talk through, is down or hung); ask again later.
   */
  GAME_SERVER_UNREACHABLE: 'GAME_SERVER_UNREACHABLE',
} as const;
export type InstanceRefusal = (typeof InstanceRefusal)[keyof typeof InstanceRefusal];
