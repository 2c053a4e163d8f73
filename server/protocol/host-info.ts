import { AuthRequest } from './schemas.js';

/** `GET uploadRules`: every rule the host applies to an upload's file and details, before a byte is sent. */
export interface UploadRulesDto {
  /** Image and icon URLs must be on one of these domains (or on this host itself). */
  allowedImageDomains: string[];
  /** The hosts that count as this host for image URLs (`host:port`). */
  localHosts: string[];
  maxFileBytes: number;
  /** Allowed extensions, lowercased with their dot, and the upload type each means. */
  extensions: Record<string, number>;
  nameMax: number;
  descriptionMax: number;
  tagsMax: number;
  tagMax: number;
  iconsMax: number;
  /** 0 Windows, 1 Android. */
  buildPlatforms: number[];
}

/** `hostStatus` (owner and admins): what the Host screen shows in any window. */
export const HostStatusRequest = AuthRequest;

export interface HostStatusDto {
  /** The address the host is bound to (`127.0.0.1`, `0.0.0.0`...). */
  bindHost: string;
  port: number;
  /** True when bound to this machine only: other machines cannot connect. */
  localOnly: boolean;
  /** What to do to open the host to the LAN, when `localOnly`. */
  openToLan: string | null;
  /** Addresses to share with players on the LAN. */
  lanUrls: string[];
  /** Users with at least one open socket. */
  connectedUsers: Array<{ Id: string; Username: string; sockets: number }>;
  requireInviteCode: boolean;
  /** Where the community lives and what this host shares it through, checked as the status is read. */
  community: CommunityDto;
}

/** A service hosts of one community share, as this host reaches it right now. */
export interface ServiceCheckDto {
  /** Its URL, without a password. */
  address: string;
  /** It answered a check within COMMUNITY_CHECK_MS. */
  ok: boolean;
  /** How long the check took (ms), when it answered. */
  ms: number | null;
  /** Why it did not answer, when it did not. */
  problem: string | null;
}

export interface CommunityDto {
  /** `embedded`: this host's data folder holds the community; `postgres`: a database several hosts may share. */
  storage: 'embedded' | 'postgres';
  /** With `--database`. */
  database: ServiceCheckDto | null;
  /** With `--redis`: presence, socket messages and shared limits between hosts. */
  redis: ServiceCheckDto | null;
  /** Host processes serving the community, this one included (heard through the database within 5 s). */
  hosts: number;
}

/** The longest a status check waits for the database or Redis (ms). */
export const COMMUNITY_CHECK_MS = 2000;

/** Bound to this machine only: loopback addresses. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

/** The one sentence the CLI and the Host screen both say when bound to loopback. */
export const OPEN_TO_LAN_HINT =
  'Only this computer can connect: the host is bound to 127.0.0.1. To let other machines on the LAN in, ' +
  'start it with --host 0.0.0.0 (or choose "Local network" as the bind address in the desktop Host screen) and allow ' +
  'the port through the firewall.';

/** An invite code as `inviteCodes` lists it (the code itself is shown once, when made). */
export interface InviteCodeDto {
  id: string;
  label: string;
  singleUse: boolean;
  /** How many sign-ups it allows, 0 for no limit (1 for a single-use code). */
  maxUses: number;
  createdAt: number;
  createdBy: string;
  /** Unix seconds, 0 for never. */
  expiresAt: number;
  uses: Array<{ userId: string; at: number }>;
  revoked: boolean;
  /** Usable now. */
  active: boolean;
}

/** A game-server token as `gameServerTokens` lists it (the token itself is shown once, when added). */
export interface GameServerTokenDto {
  id: string;
  label: string;
  createdAt: number;
  createdBy: string;
}
