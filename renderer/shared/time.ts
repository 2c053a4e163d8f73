/** Formatting of the wire's Unix-second times for people, always in the viewer's own time zone. */
import { isUntilLifted } from '../../server/protocol/audit.js';

const DATE_TIME = new Intl.DateTimeFormat(undefined, {
  weekday: 'short',
  year: 'numeric',
  month: 'short',
  day: 'numeric',
  hour: 'numeric',
  minute: '2-digit',
  timeZoneName: 'short',
});

const DATE = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'long', day: 'numeric' });

const RELATIVE = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

/** Bans meant as permanent carry a far-future end (reference 3.2); past this they read as "no end date". */
const FOREVER_SECONDS = 50 * 365 * 24 * 3600;

export function formatDateTime(unixSeconds: number): string {
  return DATE_TIME.format(new Date(unixSeconds * 1000));
}

export function formatDate(unixSeconds: number): string {
  return DATE.format(new Date(unixSeconds * 1000));
}

export function isEffectivelyForever(unixSeconds: number, nowMs: number): boolean {
  // A ban "until lifted" ends at the protocol's last second (January 2038): nearer than 50 years, still no end.
  return isUntilLifted(unixSeconds) || unixSeconds * 1000 - nowMs > FOREVER_SECONDS * 1000;
}

/**
 * "in 2 hours", "3 days ago". Rounds like people speak (59.9 minutes is "in 1 hour"), switching units at
 * thresholds rather than exact boundaries.
 */
export function formatRelative(unixSeconds: number, nowMs: number): string {
  const seconds = unixSeconds - nowMs / 1000;
  const abs = Math.abs(seconds);
  const minute = 60;
  const hour = 60 * minute;
  const day = 24 * hour;
  const steps: [Intl.RelativeTimeFormatUnit, number, number][] = [
    ['second', 1, 45],
    ['minute', minute, 45 * minute],
    ['hour', hour, 22 * hour],
    ['day', day, 26 * day],
    ['month', 30 * day, 320 * day],
  ];
  for (const [unit, size, below] of steps) {
    if (abs < below) return RELATIVE.format(Math.round(seconds / size), unit);
  }
  return RELATIVE.format(Math.round(seconds / (365 * day)), 'year');
}

/**
 * A moment in the past: "just now", "7 seconds ago", "3 days ago". Never "in 2 seconds": a time the host stamped a
 * moment ago can be a little ahead of this clock, or of a `now` that is only refreshed now and then.
 */
export function formatPast(unixSeconds: number, nowMs: number): string {
  const ago = nowMs / 1000 - unixSeconds;
  if (ago < 5) return 'just now';
  return formatRelative(unixSeconds, nowMs);
}

export function localTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}
