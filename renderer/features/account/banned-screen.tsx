import { useState } from 'react';
import type { BanStatusDto } from '../../../server/protocol/types.js';
import { formatDateTime, formatRelative, isEffectivelyForever, localTimeZone } from '../../shared/time.js';
import { AccountLayout } from './account-layout.js';

export interface BannedScreenProps {
  ban: BanStatusDto;
  username: string;
  onBack(): void;
}

export function BannedScreen({ ban, username, onBack }: BannedScreenProps) {
  // Read once: the screen describes the ban as of when it was shown.
  const [now] = useState(() => Date.now());
  const forever = isEffectivelyForever(ban.BanEnd, now);

  return (
    <AccountLayout>
      <section className="ban" aria-labelledby="ban-title">
        <div className="ban-icon" aria-hidden="true">
          <svg viewBox="0 0 24 24" width="28" height="28" fill="none" stroke="currentColor" strokeWidth="2">
            <circle cx="12" cy="12" r="9" />
            <path d="M5.6 5.6l12.8 12.8" strokeLinecap="round" />
          </svg>
        </div>
        <h1 id="ban-title" className="form-title">
          {username ? `${username} is banned` : 'This account is banned'}
        </h1>
        <p className="form-intro">
          {forever
            ? 'A moderator banned this account until they lift the ban.'
            : `A moderator banned this account. You can sign in again ${formatRelative(ban.BanEnd, now)}.`}
        </p>
        <dl className="facts">
          <div>
            <dt>Reason</dt>
            <dd>{ban.BanReason || 'No reason given'}</dd>
          </div>
          {ban.BanDescription ? (
            <div>
              <dt>Details</dt>
              <dd className="prewrap">{ban.BanDescription}</dd>
            </div>
          ) : null}
          {ban.BanBegin > 0 ? (
            <div>
              <dt>Since</dt>
              <dd>{formatDateTime(ban.BanBegin)}</dd>
            </div>
          ) : null}
          <div>
            <dt>Until</dt>
            <dd>{forever ? 'No end date' : formatDateTime(ban.BanEnd)}</dd>
          </div>
        </dl>
        <p className="muted small">Times are in your time zone ({localTimeZone()}).</p>
        <button type="button" className="button secondary block" onClick={onBack} autoFocus>
          Back to sign in
        </button>
      </section>
    </AccountLayout>
  );
}
