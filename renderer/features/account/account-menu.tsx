import { useState } from 'react';
import { STATUS_NAMES, type Status } from '../../../server/protocol/enums.js';
import { SETTABLE_STATUSES } from '../../../server/protocol/schemas.js';
import type { BioDto } from '../../../server/protocol/types.js';
import { describeError } from '../../shared/api-client.js';
import { useSession } from '../../shared/session.js';
import { useSocketStatus } from '../../shared/socket-context.js';
import { rankLabel } from '../../shared/ranks.js';

/** The signed-in person in the header: who, which rank, their status, and the way out. */
export function AccountMenu() {
  const { user, authedCall, setUser, signOut } = useSession();
  const [statusError, setStatusError] = useState<string | null>(null);
  const [savingStatus, setSavingStatus] = useState(false);
  const [signingOut, setSigningOut] = useState(false);
  const current = user.Bio.Status;
  const { health } = useSocketStatus();
  const settable = (SETTABLE_STATUSES as readonly number[]).includes(current);

  async function changeStatus(next: Status): Promise<void> {
    const previous = current;
    // Shown at once; put back if the host refuses, so the header never claims a status others do not see.
    setUser((u) => ({ ...u, Bio: { ...u.Bio, Status: next } }));
    setSavingStatus(true);
    setStatusError(null);
    try {
      const { Bio } = await authedCall<{ Bio: BioDto }>('updateBio', { bio: { Status: next } });
      setUser((u) => ({ ...u, Bio: { ...u.Bio, ...Bio } }));
    } catch (error) {
      setUser((u) => ({ ...u, Bio: { ...u.Bio, Status: previous } }));
      setStatusError(`Status not changed: ${describeError(error)}`);
    } finally {
      setSavingStatus(false);
    }
  }

  return (
    <div className="account-menu">
      <div className="who">
        <span className="avatar" aria-hidden="true">
          {user.Username.charAt(0).toUpperCase()}
          <span className="status-dot" data-status={health === 'connected' ? current : 0} />
        </span>
        <span className="who-text">
          <span className="who-name" data-testid="signed-in-username">
            {user.Username}
          </span>
          <span className="rank-badge" data-rank={user.Rank} data-testid="signed-in-rank">
            {rankLabel(user.Rank)}
          </span>
        </span>
      </div>
      <div className="status-picker">
        <label htmlFor="status-select" className="visually-hidden">
          Status
        </label>
        <select
          id="status-select"
          value={current}
          disabled={savingStatus}
          aria-describedby={statusError ? 'status-error' : undefined}
          onChange={(event) => void changeStatus(Number(event.target.value) as Status)}
        >
          {settable ? null : (
            <option value={current} disabled>
              {STATUS_NAMES[current] ?? `Status ${current}`}
            </option>
          )}
          {SETTABLE_STATUSES.map((status) => (
            <option key={status} value={status}>
              {STATUS_NAMES[status]}
            </option>
          ))}
        </select>
        {statusError ? (
          <p id="status-error" className="popover-error" role="alert">
            {statusError}
          </p>
        ) : null}
      </div>
      <button
        type="button"
        className="button secondary small sign-out"
        disabled={signingOut}
        onClick={() => {
          setSigningOut(true);
          void signOut();
        }}
      >
        <svg viewBox="0 0 24 24" width="18" height="18" aria-hidden="true" focusable="false">
          <path
            d="M9 20H6a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2h3M16 17l5-5-5-5M21 12H9"
            fill="none"
            stroke="currentColor"
            strokeWidth="2"
            strokeLinecap="round"
            strokeLinejoin="round"
          />
        </svg>
        <span className="sign-out-label">{signingOut ? 'Signing out…' : 'Sign out'}</span>
      </button>
    </div>
  );
}
