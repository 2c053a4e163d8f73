import { useEffect, useRef } from 'react';
import { useSocketStatus } from './socket-context.js';

/** What a screen shows that changes without a socket message of its own (client builds). */
export type LiveTopic = 'builds';

const CHANNEL = 'hnx.live-refresh';

function channel(): BroadcastChannel | null {
  return typeof BroadcastChannel === 'function' ? new BroadcastChannel(CHANNEL) : null;
}

/** Tells this browser's other tabs and windows that `topic` changed here (a build was published or removed). */
export function announceChange(topic: LiveTopic): void {
  const out = channel();
  if (!out) return;
  out.postMessage(topic);
  out.close();
}

/**
 * Loads `topic` again whenever it may have changed: another tab of this browser announced a change, the socket
 * (re)connected, the page became visible again, and every `pollMs` while it is visible, for changes made
 * elsewhere (another machine, the CLI) that the host has no socket message for.
 */
export function useLiveRefresh(topic: LiveTopic, load: () => void, pollMs = 10_000): void {
  const { connection } = useSocketStatus();
  const latest = useRef(load);
  useEffect(() => {
    latest.current = load;
  }, [load]);

  // Also the first load, and again after every reconnect.
  useEffect(() => {
    latest.current();
  }, [connection]);

  useEffect(() => {
    const reload = (): void => {
      if (document.visibilityState === 'visible') latest.current();
    };
    const timer = setInterval(reload, pollMs);
    document.addEventListener('visibilitychange', reload);
    const incoming = channel();
    if (incoming) {
      incoming.onmessage = (event: MessageEvent<unknown>) => {
        if (event.data === topic) latest.current();
      };
    }
    return () => {
      clearInterval(timer);
      document.removeEventListener('visibilitychange', reload);
      incoming?.close();
    };
  }, [topic, pollMs]);
}
