import { useState } from 'react';
import {
  askNotificationPermission,
  notificationState,
  playAlertSound,
  setSoundEnabled,
  soundEnabled,
  type NotificationState,
} from '../../shared/alerts.js';

const STATE_TEXT: Record<NotificationState, string> = {
  desktop: 'The desktop app notifies you itself, window open or not (turn kinds off in the tray menu).',
  granted: 'On: this browser shows a notification for invite and friend requests while this app is open.',
  default: 'Off. Turn them on to hear of invite and friend requests while this tab is in the background.',
  denied:
    'Blocked for this site by the browser. Allow notifications in the browser’s site settings (the icon left of the address), then reload.',
  unsupported: 'This browser cannot show notifications.',
};

/** Notifications and sound for invite and friend requests, set per browser (issue 18). */
export function AlertsCard() {
  const [permission, setPermission] = useState<NotificationState>(notificationState);
  const [sound, setSound] = useState(soundEnabled);
  const [asking, setAsking] = useState(false);
  return (
    <section className="card" aria-labelledby="alerts-title">
      <div className="card-heading">
        <h2 id="alerts-title" className="card-title">
          Notifications
        </h2>
        <span className={permission === 'granted' ? 'pill on' : 'pill'} data-testid="notification-state">
          {permission === 'granted'
            ? 'On'
            : permission === 'desktop'
              ? 'Desktop app'
              : permission === 'denied'
                ? 'Blocked'
                : 'Off'}
        </span>
      </div>
      <p className="muted">{STATE_TEXT[permission]}</p>
      {permission === 'default' ? (
        <div className="button-row">
          <button
            type="button"
            className="button secondary"
            disabled={asking}
            onClick={() => {
              // From the click itself: browsers only show the question for a gesture.
              setAsking(true);
              void askNotificationPermission().then((state) => {
                setPermission(state);
                setAsking(false);
              });
            }}
          >
            {asking ? 'Asking the browser…' : 'Turn on notifications'}
          </button>
        </div>
      ) : null}
      <label className="check">
        <input
          type="checkbox"
          checked={sound}
          onChange={(event) => {
            setSound(event.target.checked);
            setSoundEnabled(event.target.checked);
            if (event.target.checked) playAlertSound();
          }}
        />{' '}
        Play a sound for invite and friend requests
      </label>
      {sound ? (
        <p>
          <button type="button" className="link-button small" onClick={() => playAlertSound()}>
            Play it again
          </button>
        </p>
      ) : null}
    </section>
  );
}
