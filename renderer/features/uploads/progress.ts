/** Speeds and times left, as an upload list shows them. Pure: tests run it in Node. */
import { formatBytes } from '../../shared/bytes.js';

export function formatSpeed(bytesPerSecond: number): string {
  return `${formatBytes(bytesPerSecond)}/s`;
}

/** A short "time left": "8 s", "2 min 5 s", "14 min", "1 h 20 min". */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '–';
  const whole = Math.ceil(seconds);
  if (whole < 60) return `${Math.max(1, whole)} s`;
  const minutes = Math.floor(whole / 60);
  if (minutes < 60) {
    const rest = whole % 60;
    return minutes >= 10 || rest === 0 ? `${minutes} min` : `${minutes} min ${rest} s`;
  }
  const hours = Math.floor(minutes / 60);
  const restMinutes = minutes % 60;
  return restMinutes === 0 ? `${hours} h` : `${hours} h ${restMinutes} min`;
}

/** The whole-number percentage shown next to a bar; 100 only when really complete. */
export function percentOf(sent: number, total: number): number {
  if (total <= 0) return sent > 0 ? 100 : 0;
  const exact = (sent / total) * 100;
  return exact >= 100 ? 100 : Math.min(99, Math.floor(exact));
}

/**
 * Upload speed over a sliding window of samples, so one slow or fast moment does not swing the estimate.
 * Times are milliseconds from any monotonic clock (performance.now in the page, plain numbers in tests).
 */
export class SpeedMeter {
  private samples: { at: number; bytes: number }[] = [];

  constructor(private readonly windowMs = 5000) {}

  add(at: number, bytes: number): void {
    const last = this.samples.at(-1);
    // Bytes going down means a part was re-sent from its start: the window restarts.
    if (last && bytes < last.bytes) this.samples = [];
    this.samples.push({ at, bytes });
    const oldest = at - this.windowMs;
    while (this.samples.length > 2 && this.samples[1]!.at <= oldest) this.samples.shift();
  }

  /** Bytes per second, or null until there is at least half a second of data. */
  speed(): number | null {
    const first = this.samples[0];
    const last = this.samples.at(-1);
    if (!first || !last || last.at - first.at < 500) return null;
    return ((last.bytes - first.bytes) * 1000) / (last.at - first.at);
  }

  /** Seconds until `total`, or null while the speed is unknown or zero. */
  secondsLeft(total: number): number | null {
    const speed = this.speed();
    const last = this.samples.at(-1);
    if (speed === null || speed <= 0 || !last) return null;
    return Math.max(0, total - last.bytes) / speed;
  }

  reset(): void {
    this.samples = [];
  }
}
