import { expect } from 'chai';
import { startCounterEngine, type CounterEngine } from './counter-engines.ts';
import { randomBytes } from 'node:crypto';
import type { CounterStore } from '../../../src/store/quota/engine.ts';
import { createPostgresCounters } from '../../../src/store/quota/postgres-counters.ts';
import { createRedisCounters } from '../../../src/store/quota/redis-counters.ts';
import type { QuotaOutcome } from '../../../src/services/quota/decide.ts';
import { groupedWindowSpender } from '../../../src/services/quota/spend.ts';
import type { RateLimitRule } from '../../../src/config.ts';

// Short rate-limit windows at speed: the requests of one windowed key that arrive together are counted by one
// call to the counter store, and each still gets exactly the answer it would have had alone, in
// arrival order. Both counter stores, real engines; the store's calls are counted around it.

const NOW = new Date('2026-06-01T10:00:00.250Z');
const rules: RateLimitRule[] = [{ window: '1s', limit: 5 }, { window: '1m', limit: 8 }];

for (const kind of ['redis', 'postgres'] as const) {
  describe(`rate windows, a key's requests counted together (${kind} counters)`, function () {
    this.timeout(60_000);
    let counters: CounterStore;
    let calls: number[] = [];
    let engine: CounterEngine | null = null;
    let seq = 0;
    const fresh = () => `wg${++seq}-${randomBytes(3).toString('hex')}`;

    before(async function () {
      const e = await startCounterEngine(this, kind, 'kg_wgroups');
      engine = e;
      const real = e.kind === 'redis' ? createRedisCounters(e.redis, { prefix: e.prefix }) : createPostgresCounters(e.pool);
      counters = { ...real, spendAll: (all, count) => (calls.push(count), real.spendAll(all, count)) };
    });
    beforeEach(() => void (calls = []));
    after(async () => engine?.close());

    it('twelve requests of one key in one turn: one call; the first five served with 4..0 left in 1s, the rest refused by 1s, nothing of theirs counted', async () => {
      const spend = groupedWindowSpender(counters);
      const key = fresh();
      const answers: QuotaOutcome[] = await Promise.all(Array.from({ length: 12 }, () => spend(key, 1000, rules, NOW)));
      expect(calls).to.deep.equal([12]);
      expect(answers.map((a) => a.allowed)).to.deep.equal([...Array(5).fill(true), ...Array(7).fill(false)]);
      expect(answers.slice(0, 5).map((a) => a.windows[0]!.remaining)).to.deep.equal([4, 3, 2, 1, 0]);
      expect(answers.slice(0, 5).map((a) => a.remaining)).to.deep.equal([999, 998, 997, 996, 995]);
      for (const refused of answers.slice(5)) {
        expect(refused.refusedBy).to.equal('1s');
        expect(refused.remaining).to.equal(995);
        expect(refused.windows.map((w) => w.remaining)).to.deep.equal([0, 3]);
      }
      // The next second: the minute has 3 left, so of four requests three are served, refused by 1m.
      const next = new Date(NOW.getTime() + 1000);
      const more = await Promise.all(Array.from({ length: 4 }, () => spend(key, 1000, rules, next)));
      expect(calls).to.deep.equal([12, 4]);
      expect(more.map((a) => a.allowed)).to.deep.equal([true, true, true, false]);
      expect(more[3]!.refusedBy).to.equal('1m');
    });

    it('when the day runs out inside a group, the day\'s answer wins for the refused (no window named)', async () => {
      const spend = groupedWindowSpender(counters);
      const answers = await Promise.all(Array.from({ length: 4 }, () => spend(fresh(), 2, rules, NOW)));
      // Four different keys: four groups of one, each served.
      expect(calls).to.have.length(4);
      expect(answers.every((a) => a.allowed)).to.equal(true);
      const key = fresh();
      const same = await Promise.all(Array.from({ length: 4 }, () => spend(key, 2, rules, NOW)));
      expect(same.map((a) => a.allowed)).to.deep.equal([true, true, false, false]);
      expect(same.slice(2).map((a) => a.refusedBy)).to.deep.equal([undefined, undefined]);
      expect(same.map((a) => a.remaining)).to.deep.equal([1, 0, 0, 0]);
    });

    it('requests of one key in different seconds, or under another stamp, never share a call', async () => {
      const spend = groupedWindowSpender(counters);
      const key = fresh();
      const other: RateLimitRule[] = [{ window: '1s', limit: 5 }, { window: '1m', limit: 9 }];
      await Promise.all([spend(key, 1000, rules, NOW), spend(key, 1000, rules, new Date(NOW.getTime() + 1000)), spend(key, 1000, other, new Date(NOW.getTime() + 1000))]);
      expect(calls).to.deep.equal([1, 1, 1]);
    });

    it('requests that carry equal windows in different arrays (a grant is read anew each time) share a call', async () => {
      const spend = groupedWindowSpender(counters);
      const key = fresh();
      await Promise.all(Array.from({ length: 3 }, () => spend(key, 1000, rules.map((r) => ({ ...r })), NOW)));
      expect(calls).to.deep.equal([3]);
    });

    it('a store that fails refuses every request of the group with its error', async () => {
      const failing: CounterStore = { ...counters, spendAll: async () => { throw new Error('down'); } };
      const spend = groupedWindowSpender(failing);
      const results = await Promise.allSettled(Array.from({ length: 3 }, () => spend(fresh(), 10, rules, NOW)));
      expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'rejected', 'rejected']);
    });
  });
}
