import { useSocketClient, useSocketStatus } from './socket-context.js';
import { useNow } from './use-now.js';

const WORDS = {
  connecting: 'Connecting…',
  connected: 'Connected',
  reconnecting: 'Host unreachable',
  offline: 'Host offline',
} as const;

/** The connection to the host, in the top bar of every screen (issue 18). */
export function ShellConnection() {
  const { health } = useSocketStatus();
  return (
    <div
      className="shell-connection"
      data-health={health}
      data-testid="shell-connection"
      title={WORDS[health]}
    >
      <span className="socket-dot" aria-hidden="true" />
      <span className="shell-connection-word">{WORDS[health]}</span>
    </div>
  );
}

/** Under the top bar while the host cannot be reached: what that means and when the next try is. */
export function HostDownBanner() {
  const client = useSocketClient();
  const status = useSocketStatus();
  const now = useNow(1000);
  const down = status.health === 'reconnecting' || status.health === 'offline';
  return (
    <div role="status" aria-live="polite" className="host-down-slot">
      {down ? (
        <div className="host-down-banner" data-testid="host-down-banner">
          <strong>The host cannot be reached.</strong>{' '}
          <span>
            Nothing you change is saved until it is back; uploads in progress pause and resume by themselves.
            {status.retryAt !== null
              ? ` Trying again in ${Math.max(0, Math.ceil((status.retryAt - now) / 1000))} s.`
              : ''}
          </span>{' '}
          <button type="button" className="link-button" onClick={() => client.retryNow()}>
            Try now
          </button>
        </div>
      ) : null}
    </div>
  );
}
