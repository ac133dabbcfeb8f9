import { expect } from 'chai';
import { startCounterEngine, type CounterEngine } from './counter-engines.ts';
import type { QuotaBlockStore } from '../../../src/store/quota/engine.ts';
import { createPostgresQuotaBlocks } from '../../../src/store/quota/postgres-blocks.ts';
import { createRedisQuotaBlocks } from '../../../src/store/quota/redis-blocks.ts';

// Leased quota blocks, and a dead instance strands nothing, at the block store itself: a leased
// block is recorded with what its holder has not claimed and an expiry; whatever expires goes back
// to the counter once, whoever asks first. Both counter stores, the same answers.

const WINDOW = new Date('2026-06-01T00:00:00Z');
const TTL = 90_000;
const T0 = WINDOW.getTime() + 10 * 3600_000;
const LEASE_MS = 4000;
const terms = (id: string, nowMs = T0, claim = 25) => ({ id, claim, leaseMs: LEASE_MS, nowMs });

for (const kind of ['redis', 'postgres'] as const) {
  describe(`the quota block store (${kind} counters)`, function () {
    this.timeout(60_000);
    let store: QuotaBlockStore;
    let counter: (name: string) => Promise<number>;
    let engine: CounterEngine | null = null;
    let seq = 0;
    const fresh = () => `quota:k${++seq}`;

    before(async function () {
      const e = await startCounterEngine(this, kind, 'kg_blocks');
      engine = e;
      if (e.kind === 'redis') {
        store = createRedisQuotaBlocks(e.redis, { prefix: e.prefix });
        counter = async (name) => Number((await e.redis.get(`${e.prefix}${name}:${WINDOW.getTime() / 1000}`)) ?? 0);
      } else {
        store = createPostgresQuotaBlocks(e.pool);
        counter = async (name) => {
          const { rows } = await e.pool.query<{ value: string }>('SELECT value FROM counters WHERE name = $1 AND window_start = $2', [name, WINDOW]);
          return Number(rows[0]?.value ?? 0);
        };
      }
    });
    after(async () => engine?.close());

    it('a lease counts the whole block, hands the holder one part, and the holder claims the rest a part at a time', async () => {
      const name = fresh();
      const grant = await store.lease(name, WINDOW, 200, 100_000, 1000, TTL, terms('a:1'));
      expect(grant).to.deep.equal({ granted: 200, counted: 200, claimed: 25, id: 'a:1' });
      expect(await store.claim(name, WINDOW, 'a:1', 25, T0 + 1000)).to.equal(25);
      expect(await store.claim(name, WINDOW, 'a:1', 1000, T0 + 1000), 'no more than the record holds').to.equal(150);
      expect(await store.claim(name, WINDOW, 'a:1', 25, T0 + 1000), 'the record is empty').to.equal(0);
      expect(await counter(name)).to.equal(200);
    });

    it('a claim from an expired record gives 0, and the next call returns what it held', async () => {
      const name = fresh();
      await store.lease(name, WINDOW, 200, 100_000, 1000, TTL, terms('a:1'));
      expect(await store.claim(name, WINDOW, 'a:1', 25, T0 + LEASE_MS)).to.equal(0);
      expect(await counter(name), 'nothing moves until a lease or a spend').to.equal(200);
      expect(await store.spendOne(name, WINDOW, 100_000, TTL, T0 + LEASE_MS)).to.equal(26);
      expect(await store.claim(name, WINDOW, 'a:1', 25, T0 + 1000), 'the record is gone, whatever the clock').to.equal(0);
    });

    it('a lease returns expired records before it decides the grant', async () => {
      const name = fresh();
      // 1,200 of 2,200: room for one block of 200 above the 1,000 counted one by one.
      await store.lease(name, WINDOW, 1200, 2200, 1000, TTL, terms('a:1'));
      expect((await store.lease(name, WINDOW, 200, 2200, 1000, TTL, terms('b:1', T0 + 1000))).granted, 'no room while the block is out').to.equal(0);
      const again = await store.lease(name, WINDOW, 200, 2200, 1000, TTL, terms('b:2', T0 + LEASE_MS));
      expect(again).to.deep.include({ granted: 200, counted: 225, claimed: 25 });
    });

    it('an expired record is returned exactly once when several instances ask at the same moment', async () => {
      const name = fresh();
      for (let i = 0; i < 20; i++) await store.lease(name, WINDOW, 200, 100_000, 1000, TTL, terms(`a:${i}`, T0 + i));
      expect(await counter(name)).to.equal(4000);
      // Every record expired; 20 spends and 20 leases (claim 200: nothing recorded) race for them.
      const at = T0 + LEASE_MS + 20;
      await Promise.all([
        ...Array.from({ length: 20 }, () => store.spendOne(name, WINDOW, 100_000, TTL, at)),
        ...Array.from({ length: 20 }, (_, i) => store.lease(name, WINDOW, 200, 100_000, 1000, TTL, terms(`b:${i}`, at, 200))),
      ]);
      // 20 × 25 claimed before they expired stay counted, plus 20 spends and 20 new blocks.
      expect(await counter(name)).to.equal(20 * 25 + 20 + 20 * 200);
    });

    it('a hand-back returns the unspent claimed part and what the record still holds, once', async () => {
      const name = fresh();
      await store.lease(name, WINDOW, 200, 100_000, 1000, TTL, terms('a:1'));
      expect(await store.claim(name, WINDOW, 'a:1', 25, T0 + 100)).to.equal(25);
      // 50 claimed, 10 of them spent: 40 unspent, 150 still recorded.
      await store.handBack(name, WINDOW, 'a:1', 40);
      expect(await counter(name)).to.equal(10);
      expect(await store.spendOne(name, WINDOW, 100_000, TTL, T0 + LEASE_MS), 'the record went with the hand-back').to.equal(11);
      expect(await store.claim(name, WINDOW, 'a:1', 25, T0 + 200)).to.equal(0);
    });

    it('a spend refused at the limit counts nothing', async () => {
      const name = fresh();
      const spends = [];
      for (let i = 0; i < 5; i++) spends.push(await store.spendOne(name, WINDOW, 3, TTL, T0));
      expect(spends).to.deep.equal([1, 2, 3, 4, 4]);
      expect(await counter(name)).to.equal(3);
    });
  });
}
