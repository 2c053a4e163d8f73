// Figures: quantiles of latencies and the number formats of the tables.

/** count, p50, p95, p99, max of a list of latencies (ms). */
export function summary(values) {
  const sorted = Float64Array.from(values).sort();
  const at = (q) => sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] ?? NaN; // nearest rank
  return { count: sorted.length, p50: at(0.5), p95: at(0.95), p99: at(0.99), max: sorted.at(-1) ?? NaN };
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median(values) {
  const sorted = Float64Array.from(values).sort();
  const half = sorted.length >> 1;
  return sorted.length % 2 ? sorted[half] : (sorted[half - 1] + sorted[half]) / 2;
}
/** Values of one unit as "a / b unit", `digits` decimals each. */
export const several = (values, unit, digits = 0) =>
  `${values.map((v) => v.toFixed(digits)).join(' / ')} ${unit}`;
/** Quantiles of a summary as "a / b ms". */
export function spread(s, keys = ['p50', 'p99'], digits = 2) {
  const values = keys.map((k) => s[k]);
  return several(values, 'ms', digits);
}

/** A list of problems keeping the first few distinct messages. */
export function problems() {
  const out = { count: 0, samples: [] };
  out.add = (message) => {
    out.count++;
    if (out.samples.length < 5 && !out.samples.includes(message)) out.samples.push(message);
  };
  return out;
}

/** The failures of several loads (httpLoad results) together. */
export const failuresOf = (results) => ({
  count: results.reduce((sum, r) => sum + r.failures, 0),
  samples: results.flatMap((r) => r.failureSamples).slice(0, 8),
});

const finite = (f) => (n) => (Number.isFinite(n) ? f(n) : 'n/a');
const int = finite((n) => Math.round(n).toLocaleString('en-US'));
/** How a value is shown, by its unit. */
export const show = {
  ms: finite((n) => `${n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : int(n)} ms`),
  s: finite((n) => `${n.toFixed(2)} s`),
  MiB: finite((n) => `${n.toFixed(1)} MiB`),
  KiB: finite((n) => `${n.toFixed(1)} KiB`),
  kB: finite((n) => `${(n / 1000).toFixed(1)} kB`),
  '%': finite((n) => `${Math.round(n)}%`),
  x: finite((n) => `${n.toFixed(2)}x`),
  us: finite((n) => `${int(n)} us`),
  '': int,
};
export const fmt = (value, unit = '') => (show[unit] ?? ((n) => `${int(n)} ${unit}`))(value);
