import { describe, expect, it } from 'vitest';
import { DeliveryBatches, type Delivery } from '../../server/cluster/delivery-batch.js';

const turn = () => new Promise((resolve) => setImmediate(resolve));
const item = (user: string): Delivery => ({ users: [user], json: `{"to":"${user}"}` });

describe('DeliveryBatches', () => {
  it('sends what one turn asked for together, per process, and tells each caller', async () => {
    const sends: Array<[string, string[]]> = [];
    const batches = new DeliveryBatches(async (processId, items) => {
      sends.push([processId, items.flatMap((i) => i.users)]);
    });
    await Promise.all([
      batches.add('p1', item('a')),
      batches.add('p1', item('b')),
      batches.add('p2', item('c')),
    ]);
    expect(sends).toEqual([
      ['p1', ['a', 'b']],
      ['p2', ['c']],
    ]);
  });

  it('under load sends at most once per gap: deliveries of the next turns wait for it and go together', async () => {
    const sends: string[][] = [];
    // A gap long enough for a slow machine (the host's is 2 ms).
    const batches = new DeliveryBatches(async (_processId, items) => {
      sends.push(items.flatMap((i) => i.users));
    }, 200);
    await batches.add('p1', item('a'));
    const later = [batches.add('p1', item('b'))];
    await turn();
    later.push(batches.add('p1', item('c')));
    await Promise.all(later);
    expect(sends).toEqual([['a'], ['b', 'c']]);
  });

  it('hands a failed send to every caller of its batch', async () => {
    const batches = new DeliveryBatches(async () => {
      throw new Error('Redis did not answer');
    });
    const outcomes = await Promise.allSettled([batches.add('p1', item('a')), batches.add('p1', item('b'))]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
  });
});
