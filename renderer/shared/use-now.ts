import { useEffect, useState } from 'react';

/** The current time in ms, refreshed every `intervalMs`, for relative times and countdowns that must move. */
export function useNow(intervalMs = 15_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), intervalMs);
    return () => clearInterval(timer);
  }, [intervalMs]);
  return now;
}
