import { useEffect, useRef } from 'react';
import type { WarnStatusDto } from '../../../server/protocol/types.js';
import { formatDateTime } from '../../shared/time.js';

export interface WarnedNoticeProps {
  warning: WarnStatusDto;
  onClose(): void;
}

/**
 * The warning a sign-in delivered. The host clears the warning as it hands it out, so this is its one showing;
 * a modal makes sure it is read before the app is used.
 */
export function WarnedNotice({ warning, onClose }: WarnedNoticeProps) {
  const dialog = useRef<HTMLDialogElement>(null);

  useEffect(() => {
    const element = dialog.current;
    if (element && !element.open) element.showModal();
  }, []);

  return (
    <dialog ref={dialog} className="dialog" aria-labelledby="warned-title" onClose={onClose}>
      <div className="dialog-icon" aria-hidden="true">
        !
      </div>
      <h2 id="warned-title" className="dialog-title">
        You received a warning
      </h2>
      <p className="form-intro">
        A moderator warned this account. Please read the reason; repeated problems can lead to a ban.
      </p>
      <dl className="facts">
        <div>
          <dt>Reason</dt>
          <dd>{warning.WarnReason || 'No reason given'}</dd>
        </div>
        {warning.WarnDescription ? (
          <div>
            <dt>Details</dt>
            <dd className="prewrap">{warning.WarnDescription}</dd>
          </div>
        ) : null}
        {warning.TimeWarned > 0 ? (
          <div>
            <dt>When</dt>
            <dd>{formatDateTime(warning.TimeWarned)}</dd>
          </div>
        ) : null}
      </dl>
      <button
        type="button"
        className="button primary block"
        autoFocus
        onClick={() => dialog.current?.close()}
      >
        I understand
      </button>
    </dialog>
  );
}
