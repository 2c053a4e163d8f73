import { isAbsolute } from 'node:path';
import { isIP } from 'node:net';
import type { HostSettings, NotificationRequest } from '../server/protocol/host-bridge.js';

/** A renderer sent an argument the host refuses; nothing was changed. */
export class IpcArgumentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'IpcArgumentError';
  }
}

const MAX_PATH_LENGTH = 4096;
const MAX_URL_LENGTH = 8192;
const MAX_TITLE_LENGTH = 256;
const MAX_BODY_LENGTH = 4096;
// RFC 1123 host names: labels of letters, digits and inner hyphens, 253 characters at most.
const HOST_NAME =
  /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/i;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function onlyKeys(value: Record<string, unknown>, allowed: readonly string[], what: string): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) throw new IpcArgumentError(`${what}: unknown field ${JSON.stringify(key)}`);
  }
}

export function parsePort(value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 65535) {
    throw new IpcArgumentError('port must be a whole number from 0 to 65535');
  }
  return value;
}

/** An IPv4/IPv6 literal or a host name to bind, e.g. 127.0.0.1 or 0.0.0.0. */
export function parseHost(value: unknown): string {
  if (typeof value !== 'string' || (isIP(value) === 0 && !HOST_NAME.test(value))) {
    throw new IpcArgumentError('host must be an IP address or host name, e.g. 127.0.0.1 or 0.0.0.0');
  }
  return value;
}

export function parseDataDir(value: unknown): string {
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    value.length > MAX_PATH_LENGTH ||
    value.includes('\0')
  ) {
    throw new IpcArgumentError('dataDir must be a folder path');
  }
  if (!isAbsolute(value)) throw new IpcArgumentError('dataDir must be an absolute path');
  return value;
}

/** The fields of `updateSettings`; every one optional, nothing else accepted. */
export function parseSettingsPatch(value: unknown): Partial<HostSettings> {
  if (!isPlainObject(value)) throw new IpcArgumentError('settings must be an object');
  onlyKeys(value, ['host', 'port', 'dataDir'], 'settings');
  const patch: Partial<HostSettings> = {};
  if (value.host !== undefined) patch.host = parseHost(value.host);
  if (value.port !== undefined) patch.port = parsePort(value.port);
  if (value.dataDir !== undefined) patch.dataDir = parseDataDir(value.dataDir);
  return patch;
}

/** Only http(s) goes to the system browser: file:, javascript:, custom schemes could run things locally. */
export function parseExternalUrl(value: unknown): string {
  if (typeof value !== 'string' || value.length > MAX_URL_LENGTH)
    throw new IpcArgumentError('url must be a string');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new IpcArgumentError('url must be an absolute http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new IpcArgumentError('only http and https URLs can be opened');
  }
  return url.href;
}

export function parseNotification(value: unknown): NotificationRequest {
  if (!isPlainObject(value)) throw new IpcArgumentError('notification must be an object');
  onlyKeys(value, ['title', 'body'], 'notification');
  const { title, body } = value;
  if (typeof title !== 'string' || title.trim().length === 0 || title.length > MAX_TITLE_LENGTH) {
    throw new IpcArgumentError(`notification title must be 1..${MAX_TITLE_LENGTH} characters`);
  }
  if (typeof body !== 'string' || body.length > MAX_BODY_LENGTH) {
    throw new IpcArgumentError(`notification body must be at most ${MAX_BODY_LENGTH} characters`);
  }
  return { title, body };
}

const MAX_ID_LENGTH = 200;
const MAX_TOKEN_LENGTH = 1024;

/** The page's signed-in session (`{userId, tokenContent}`), or null when it signed out. */
export function parseDesktopUser(value: unknown): { userId: string; tokenContent: string } | null {
  if (value === null) return null;
  if (!isPlainObject(value)) throw new IpcArgumentError('desktop user must be an object or null');
  onlyKeys(value, ['userId', 'tokenContent'], 'desktop user');
  const { userId, tokenContent } = value;
  if (typeof userId !== 'string' || userId.length === 0 || userId.length > MAX_ID_LENGTH) {
    throw new IpcArgumentError('userId must be a user id');
  }
  if (
    typeof tokenContent !== 'string' ||
    tokenContent.length === 0 ||
    tokenContent.length > MAX_TOKEN_LENGTH
  ) {
    throw new IpcArgumentError('tokenContent must be a token');
  }
  return { userId, tokenContent };
}

/** Methods without arguments still refuse extra ones, so a confused caller learns early. */
export function expectNoArguments(args: readonly unknown[]): void {
  if (args.length > 0) throw new IpcArgumentError('this call takes no arguments');
}

/** For one-argument methods: exactly one argument. */
export function singleArgument(args: readonly unknown[]): unknown {
  if (args.length !== 1) throw new IpcArgumentError(`expected 1 argument, got ${args.length}`);
  return args[0];
}
