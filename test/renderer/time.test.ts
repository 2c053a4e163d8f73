import { describe, expect, it } from 'vitest';
import { formatPast, formatRelative, isEffectivelyForever } from '../../renderer/shared/time.js';
import { BAN_UNTIL_LIFTED } from '../../server/protocol/audit.js';

describe('renderer time formatting', () => {
  const now = Date.UTC(2030, 0, 1, 12, 0, 0);
  const at = (seconds: number) => now / 1000 + seconds;

  it('rounds an end just under an hour away to "in 1 hour", as people say it', () => {
    expect(formatRelative(at(3599), now)).toBe('in 1 hour');
    expect(formatRelative(at(3600), now)).toBe('in 1 hour');
  });

  it('uses minutes, days and past tense where they fit', () => {
    expect(formatRelative(at(10 * 60), now)).toBe('in 10 minutes');
    expect(formatRelative(at(3 * 86400), now)).toBe('in 3 days');
    expect(formatRelative(at(-2 * 3600), now)).toBe('2 hours ago');
  });

  it('treats a ban ending in a century as having no end date', () => {
    expect(isEffectivelyForever(at(100 * 365 * 86400), now)).toBe(true);
    expect(isEffectivelyForever(at(365 * 86400), now)).toBe(false);
  });

  it('treats a ban until lifted (the last second the protocol allows, in 2038) as having no end date', () => {
    expect(isEffectivelyForever(BAN_UNTIL_LIFTED, now)).toBe(true);
    expect(isEffectivelyForever(BAN_UNTIL_LIFTED - 1, now)).toBe(false);
  });

  it('says a past moment in the past tense, never "in 7 seconds", even when it is a little ahead of now', () => {
    expect(formatPast(at(-7), now)).toBe('7 seconds ago');
    expect(formatPast(at(-2 * 86400), now)).toBe('2 days ago');
    expect(formatPast(at(0), now)).toBe('just now');
    expect(formatPast(at(7), now)).toBe('just now');
  });
});
