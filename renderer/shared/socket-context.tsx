import {
  createContext,
  useContext,
  useEffect,
  useRef,
  useState,
  useSyncExternalStore,
  type ReactNode,
} from 'react';
import type { Session } from './session.js';
import {
  SocketClient,
  socketUrlFor,
  type SocketEvent,
  type SocketFactory,
  type SocketStatus,
} from './socket-client.js';
import { useNow } from './use-now.js';

const SocketContext = createContext<SocketClient | null>(null);

export interface SocketProviderProps {
  session: Session;
  /** The host ended the session over the socket (token revoked, banned): sign out and say why. */
  onRevoked(why: string): void;
  children: ReactNode;
  connect?: SocketFactory;
}

/** One socket per signed-in page, shared by every screen; it lives as long as the session does. */
export function SocketProvider({ session, onRevoked, children, connect }: SocketProviderProps) {
  const { userid, tokenContent } = session;
  const [client] = useState(
    () =>
      new SocketClient({
        url: socketUrlFor(window.location),
        userId: userid,
        tokenContent,
        connect,
      }),
  );

  useEffect(() => client.onRevoked((why) => onRevoked(why)), [client, onRevoked]);

  useEffect(() => {
    client.start();
    const online = (): void => client.retryNow();
    const offline = (): void => client.networkLost();
    // A tab coming back from the background may have slept through its timers.
    const visible = (): void => {
      if (document.visibilityState === 'visible') client.retryNow();
    };
    window.addEventListener('online', online);
    window.addEventListener('offline', offline);
    document.addEventListener('visibilitychange', visible);
    return () => {
      window.removeEventListener('online', online);
      window.removeEventListener('offline', offline);
      document.removeEventListener('visibilitychange', visible);
      client.stop();
    };
  }, [client]);

  return <SocketContext value={client}>{children}</SocketContext>;
}

export function useSocketClient(): SocketClient {
  const client = useContext(SocketContext);
  if (!client) throw new Error('useSocketClient is only available inside SocketProvider');
  return client;
}

export function useSocketStatus(): SocketStatus {
  const client = useSocketClient();
  return useSyncExternalStore(
    (listener) => client.onStatus(listener),
    () => client.status(),
  );
}

/** Calls `handler` for every server event; the latest handler is used without resubscribing. */
export function useSocketEvent(handler: (event: SocketEvent) => void): void {
  const client = useSocketClient();
  const latest = useRef(handler);
  useEffect(() => {
    latest.current = handler;
  }, [handler]);
  useEffect(() => client.subscribe((event) => latest.current(event)), [client]);
}

const HEALTH_TEXT: Record<SocketStatus['health'], string> = {
  connecting: 'Connecting…',
  connected: 'Live',
  reconnecting: 'Reconnecting',
  offline: 'Offline',
};

/** Whether live updates flow: a dot and a word, the wait before the next attempt, and a way to retry at once. */
export function SocketHealthIndicator() {
  const client = useSocketClient();
  const status = useSocketStatus();
  const now = useNow(1000);
  const waiting = status.retryAt !== null ? Math.max(0, Math.ceil((status.retryAt - now) / 1000)) : null;
  const detail =
    status.health === 'connected'
      ? 'Live updates are on.'
      : `${status.problem ?? 'Not connected.'}${waiting !== null ? ` Retrying in ${waiting} s.` : ''}`;
  return (
    <div className="socket-health" data-health={status.health} data-testid="socket-health">
      <span className="socket-dot" aria-hidden="true" />
      <span className="socket-word" role="status">
        {HEALTH_TEXT[status.health]}
        <span className="visually-hidden">. {detail}</span>
      </span>
      {status.health === 'connected' || status.health === 'connecting' ? null : (
        <>
          <span className="socket-detail muted small" aria-hidden="true">
            {waiting !== null ? `retry in ${waiting} s` : (status.problem ?? '')}
          </span>
          {waiting !== null ? (
            <button type="button" className="link-button small" onClick={() => client.retryNow()}>
              Retry now
            </button>
          ) : null}
        </>
      )}
    </div>
  );
}
