export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** Unix seconds, as every time on the wire (reference 2.3). */
export function unixSeconds(clock: Clock): number {
  return Math.floor(clock.now() / 1000);
}
