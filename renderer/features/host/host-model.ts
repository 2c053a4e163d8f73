import type { HostSettings } from '../../../server/protocol/host-bridge.js';

/** The address choices most hosts need; anything else is a custom address. */
export const LOOPBACK = '127.0.0.1';
export const ALL_INTERFACES = '0.0.0.0';

const HOST_NAME =
  /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/i;

function isIPv4(value: string): boolean {
  const parts = value.split('.');
  return (
    parts.length === 4 &&
    parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255 && String(Number(p)) === p)
  );
}

function isIPv6(value: string): boolean {
  if (!/^[0-9a-f:.]+$/i.test(value) || !value.includes(':')) return false;
  const doubles = value.split('::').length - 1;
  if (doubles > 1) return false;
  const groups = value.split(':').filter((g) => g !== '');
  return groups.length <= 8 && groups.every((g) => /^[0-9a-f]{1,4}$/i.test(g) || isIPv4(g));
}

/** Same rule as main's IPC check (an IP address or a host name), so a bad value is caught before it is sent. */
export function bindAddressProblem(value: string): string | undefined {
  const v = value.trim();
  if (v === '') return 'Enter an address, e.g. 127.0.0.1 or 0.0.0.0';
  if (isIPv4(v) || isIPv6(v) || (HOST_NAME.test(v) && !/^[\d.]+$/.test(v))) return undefined;
  return 'Must be an IP address (e.g. 192.168.1.20) or a host name';
}

export function portProblem(value: string): string | undefined {
  const v = value.trim();
  if (!/^\d+$/.test(v)) return 'Enter a whole number from 1024 to 65535 (or 0 for any free port)';
  const port = Number(v);
  if (port > 65535) return 'Ports go up to 65535';
  return undefined;
}

/** A port the system may refuse without admin rights, said before saving rather than after a failed start. */
export function portWarning(value: string): string | undefined {
  const port = Number(value.trim());
  if (!Number.isInteger(port)) return undefined;
  if (port === 0) return 'Picks a free port at each start: the address changes every time.';
  if (port < 1024) return 'Ports below 1024 need admin rights on most systems.';
  return undefined;
}

export function dataDirProblem(value: string): string | undefined {
  const v = value.trim();
  if (v === '') return 'Enter a folder';
  if (v.length > 4096 || v.includes('\0')) return 'That is not a folder path';
  if (!/^(\/|[A-Za-z]:[\\/]|\\\\)/.test(v)) return 'Use a full path, e.g. /home/you/hypernex or C:\\Hypernex';
  return undefined;
}

/** The settings that differ from `current`, typed for updateSettings. */
export function settingsPatch(
  current: HostSettings,
  form: { host: string; port: string; dataDir: string },
): Partial<HostSettings> {
  const patch: Partial<HostSettings> = {};
  const host = form.host.trim();
  const port = Number(form.port.trim());
  const dataDir = form.dataDir.trim();
  if (host !== current.host) patch.host = host;
  if (port !== current.port) patch.port = port;
  if (dataDir !== current.dataDir) patch.dataDir = dataDir;
  return patch;
}

/** An IPC failure without Electron's "Error invoking remote method …: SomeError:" wrapping. */
export function bridgeErrorText(error: unknown): string {
  const raw = error instanceof Error ? error.message : String(error);
  return raw.replace(/^Error invoking remote method '[^']*': /, '').replace(/^\w*Error: /, '');
}
