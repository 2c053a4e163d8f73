import { formatDateTime, formatPast } from './time.js';
import { useNow } from './use-now.js';

/** "7 seconds ago" that keeps counting; only this small element redraws each second. */
export function PastTime({ unixSeconds }: { unixSeconds: number }) {
  const now = useNow(1000);
  return (
    <time dateTime={new Date(unixSeconds * 1000).toISOString()} title={formatDateTime(unixSeconds)}>
      {formatPast(unixSeconds, now)}
    </time>
  );
}
