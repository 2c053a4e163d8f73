import type { HostBridge, HostState } from '../../server/protocol/host-bridge.js';

/** The desktop shell's bridge; undefined in a LAN browser, where only the HTTP API exists. */
export function hostBridge(): HostBridge | undefined {
  return (window as Window & { hypernexHost?: HostBridge }).hypernexHost;
}

/** The host's state when running inside the desktop window, or null (LAN browser, or the bridge failed). */
export async function hostState(): Promise<HostState | null> {
  const bridge = hostBridge();
  if (!bridge) return null;
  try {
    return await bridge.getState();
  } catch {
    return null;
  }
}
