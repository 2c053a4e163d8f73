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

/**
 * Under the top bar while the host cannot be reached: what that means and when the next try is. It sticks with
 * the top bar, so it is in view however far the page is scrolled; its words are a polite live region (the
 * countdown is left out of it, or a screen reader would read every second of it).
 */
export function HostDownBanner() {
  const client = useSocketClient();
  const status = useSocketStatus();
  const now = useNow(1000);
  const down = status.health === 'reconnecting' || status.health === 'offline';
  const wait = status.retryAt !== null ? Math.max(0, Math.ceil((status.retryAt - now) / 1000)) : null;
  return (
    <div className="host-down-slot">
      <div
        role="status"
        aria-live="polite"
        className={down ? 'host-down-banner' : undefined}
        data-testid={down ? 'host-down-banner' : undefined}
      >
        {down ? (
          <span className="host-down-words">
            <strong>The host cannot be reached.</strong>{' '}
            <span className="host-down-detail">
              Nothing you change is saved until it is back; uploads in progress pause and resume by
              themselves.
            </span>
          </span>
        ) : null}
        {down ? (
          <span className="host-down-actions">
            {wait !== null ? <span aria-hidden="true">Trying again in {wait} s.</span> : null}
            <button type="button" className="link-button" onClick={() => client.retryNow()}>
              Try now
            </button>
          </span>
        ) : null}
      </div>
    </div>
  );
}
