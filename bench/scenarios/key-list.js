// The sorted keys searches read (server/store/key-search.ts), made again after an index changed: sorted anew, or
// patched with the keys the changed records lost and gained (what a popularity save or a sign-up changes).
import { dist } from '../harness/host.js';
import { median } from '../harness/stats.js';

/** Milliseconds `fn` takes, the median of `rounds` runs. */
function timed(rounds, fn) {
  const times = [];
  for (let r = 0; r < rounds; r++) {
    const start = performance.now();
    fn(r);
    times.push(performance.now() - start);
  }
  return median(times);
}

export default {
  describe:
    "An index's sorted keys made again after a change, as searches and popularity rankings need them: sorted " +
    'anew, against patched with the keys 10, 100 and 1,000 changed records lost and gained (medians).',
  options: {
    records: { default: 20_000, help: 'records in the index (5 keys each, as popularity records have)' },
    rounds: { default: 9, help: 'runs of each (the median is shown)' },
  },

  async load(ctx) {
    const { records, rounds } = ctx.options;
    const { KeyList } = await dist('store/key-search.js');
    const key = (window, count) => `avatar:${window}:${String(1e12 - count).padStart(13, '0')}`;
    const ids = Array.from({ length: records }, (_, i) => `avatar_${String(i).padStart(8, '0')}`);
    const hits = ids.flatMap((id, i) => [0, 1, 2, 3, 4].map((w) => ({ key: key(w, i % 1000), id })));
    const rows = [
      [
        `sorted anew (${hits.length.toLocaleString('en-US')} keys)`,
        timed(rounds, () => new KeyList(hits)),
        'ms',
      ],
    ];
    for (const changed of [10, 100, 1000]) {
      let list = new KeyList(hits);
      const counts = new Map(ids.map((id, i) => [id, i % 1000]));
      const ms = timed(rounds, (r) => {
        // Records spread over the index each counted once more: every one of their five keys moves.
        const touched = Array.from({ length: changed }, (_, n) => ids[(n * 7919 + r * 104_729) % records]);
        const removed = [];
        const added = [];
        for (const id of touched) {
          const before = counts.get(id);
          counts.set(id, before + 1);
          for (let w = 0; w < 5; w++) {
            removed.push({ key: key(w, before), id });
            added.push({ key: key(w, before + 1), id });
          }
        }
        list = list.patched(removed, added);
      });
      rows.push([`patched, ${changed} records changed`, ms, 'ms']);
    }
    return { title: `${records.toLocaleString('en-US')} records, ${rounds} runs each`, rows };
  },
};
