const UNITS = ['B', 'kB', 'MB', 'GB', 'TB'] as const;

/**
 * A size as every screen shows it, in decimal units as the host phrases its own limit ("1000 MB"):
 * 1 kB = 1,000 bytes, 1 MB = 1,000,000 bytes. One decimal while it carries information (1.5 MB), none once the
 * number is big (153 MB). The one size format of the UI: uploads, content, downloads and client builds.
 */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) return '–';
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < UNITS.length - 1) {
    value /= 1000;
    unit++;
  }
  if (unit === 0) return `${Math.round(value)} B`;
  // 999,600 bytes would read "1000 kB": that is 1.0 MB.
  if (Math.round(value) >= 1000 && unit < UNITS.length - 1) {
    value /= 1000;
    unit++;
  }
  // 99.96 would read "100.0": past 99.95 no decimal.
  const digits = value >= 99.95 ? 0 : 1;
  return `${value.toFixed(digits)} ${UNITS[unit]}`;
}
