import { expect } from 'chai';
import { createPool, type Pool } from '../../src/store/db.ts';
import { touchKeys } from '../../src/store/apikeys.ts';
import { addUsage, type UsageDelta } from '../../src/store/usage.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { signUp } from '../support/http.ts';

// Two instances flushing their batches of last use and usage for the same keys at the same moment,
// each having met the keys in its own order: every batch takes its rows in id order, so PostgreSQL
// never finds a cycle of waits (its own deadlock count stays where it was) and no batch is lost.

const KEYS = 24;
const ROUNDS = 1_000;

function shuffled<T>(xs: readonly T[]): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * The deadlocks PostgreSQL counted in the database, the pools' own included: a server process
 * publishes its counts about once a second, so each connection of each pool is first told to
 * publish them before it next answers (all checked out at once, so none is asked twice).
 */
async function deadlocks(pools: Pool[], name: string): Promise<number> {
  for (const pool of pools) {
    const clients = await Promise.all(Array.from({ length: pool.totalCount }, () => pool.connect()));
    try {
      await Promise.all(clients.map((c) => c.query('SELECT pg_stat_force_next_flush()')));
    } finally {
      clients.forEach((c) => c.release());
    }
  }
  const { rows } = await pools[0]!.query<{ n: string }>('SELECT deadlocks n FROM pg_stat_database WHERE datname = $1', [name]);
  return Number(rows[0]!.n);
}

describe('faults: two instances flushing the same keys', function () {
  this.timeout(180_000);
  let gw: TestGateway;
  let pools: Pool[] = [];
  before(async () => {
    gw = await startTestGateway({ config: { apiKeys: { enabled: true, variant: 'A', prefix: 'key_', maxKeysPerUser: 100, maxCreatesPerDay: 100 } } });
    pools = [createPool(gw.database.url), createPool(gw.database.url)];
  });
  after(async () => {
    await Promise.all(pools.map((p) => p.end()));
    await gw?.stop();
  });

  it(`${ROUNDS} times: no deadlock, every count written`, async () => {
    const { client } = await signUp(gw.url);
    const ids: string[] = [];
    for (let i = 0; i < KEYS; i++) ids.push((await client.post('/api/api-keys', { name: `k${i}` })).body.id as string);
    const before = await deadlocks(pools, gw.database.name);
    const day = new Date().toISOString().slice(0, 10);

    const instance = async (pool: Pool) => {
      for (let round = 0; round < ROUNDS; round++) {
        const at = new Date();
        const order = shuffled(ids);
        const deltas: UsageDelta[] = order.map((id) => ({ subject: 'key', id, day, requests: 1, refused: 0 }));
        await Promise.all([touchKeys(pool, order.map((id) => ({ id, at }))), addUsage(pool, 'key', deltas)]);
      }
    };
    await Promise.all(pools.map(instance));

    expect(await deadlocks(pools, gw.database.name), 'deadlocks PostgreSQL detected in this database').to.equal(before);
    const { rows } = await pools[0]!.query<{ requests: string }>('SELECT requests FROM key_usage_daily WHERE key_id = ANY($1::uuid[])', [ids]);
    expect(rows.map((r) => Number(r.requests))).to.deep.equal(ids.map(() => 2 * ROUNDS));
  });
});
