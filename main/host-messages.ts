// The messages main and the host process exchange over the utility process's port (or a forked Node child's IPC
// channel in tests): structured-clone data only. main/host-child.ts is the other end.
import type { ConfigOverrides } from '../server/config.js';
import type { HostClients } from '../server/protocol/host-bridge.js';

/** Something the host saw that the desktop user may want a native notification for. */
export type HostNotice =
  | { kind: 'invite-request'; userId: string; requestId: string; fromUserId: string; fromUsername: string }
  | { kind: 'friend-request'; userId: string; fromUserId: string; fromUsername: string };

/** A question main asks and the host answers with the same `id`. */
export type HostQuery =
  | { what: 'uploads-in-progress' }
  | { what: 'dismiss-invite'; userId: string; requestId: string }
  | { what: 'ping' };

export type ToHost =
  | { type: 'start'; config: ConfigOverrides }
  /** Close the server (its store checkpoints and releases the folder lock), answer `stopped`, then exit. */
  | { type: 'stop' }
  /** Whose invite and friend requests to report as notices; null for nobody. */
  | { type: 'desktop-user'; user: { userId: string; tokenContent: string } | null }
  | { type: 'query'; id: number; query: HostQuery };

export type FromHost =
  | { type: 'started'; url: string; lanUrls: string[]; setupSecret: string | null; dataDir: string }
  | { type: 'start-failed'; message: string; code: string | null }
  | { type: 'clients'; clients: HostClients; setupSecret: string | null }
  | { type: 'notice'; notice: HostNotice }
  | { type: 'answer'; id: number; ok: true; value: unknown }
  | { type: 'answer'; id: number; ok: false; message: string }
  | { type: 'stopped' };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const isString = (value: unknown): value is string => typeof value === 'string';

function isClients(value: unknown): value is HostClients {
  return (
    isRecord(value) &&
    typeof value.connections === 'number' &&
    Array.isArray(value.users) &&
    value.users.every(
      (user) =>
        isRecord(user) &&
        isString(user.userId) &&
        isString(user.username) &&
        typeof user.sockets === 'number',
    )
  );
}

function isNotice(value: unknown): value is HostNotice {
  if (!isRecord(value) || !isString(value.userId) || !isString(value.fromUserId)) return false;
  if (!isString(value.fromUsername)) return false;
  if (value.kind === 'invite-request') return isString(value.requestId);
  return value.kind === 'friend-request';
}

/**
 * The host process is ours, but a message that does not fit (a version skew after an update, a bug) is dropped
 * with a log line rather than trusted with main's state.
 */
export function parseFromHost(value: unknown): FromHost | null {
  if (!isRecord(value)) return null;
  switch (value.type) {
    case 'started':
      return isString(value.url) &&
        Array.isArray(value.lanUrls) &&
        value.lanUrls.every(isString) &&
        (value.setupSecret === null || isString(value.setupSecret)) &&
        isString(value.dataDir)
        ? (value as FromHost)
        : null;
    case 'start-failed':
      return isString(value.message) && (value.code === null || isString(value.code))
        ? (value as FromHost)
        : null;
    case 'clients':
      return isClients(value.clients) && (value.setupSecret === null || isString(value.setupSecret))
        ? (value as FromHost)
        : null;
    case 'notice':
      return isNotice(value.notice) ? (value as FromHost) : null;
    case 'answer':
      return typeof value.id === 'number' && (value.ok === true || isString(value.message))
        ? (value as FromHost)
        : null;
    case 'stopped':
      return { type: 'stopped' };
    default:
      return null;
  }
}
