import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { requireRedis } from '../support/redis.ts';

// The start log says how many PostgreSQL connections one instance may open, by what opens them, so
// an operator can multiply by the fleet's size before max_connections is reached, not after.

interface Budget { pool: number; counterPool: number; signal: number; direct: number; total: number }

const budgetIn = (g: TestGateway): Budget => {
  const line = g.logs.find((l) => l.includes('keygate listening'));
  expect(line, 'the start log line').to.be.a('string');
  return (JSON.parse(line!) as { postgresConnections: Budget }).postgresConnections;
};

describe('faults: the connection budget', () => {
  let g: TestGateway | undefined;
  afterEach(async () => g?.stop());

  it('with Redis counters: the request pool (database.poolSize), the signal connection and the start-up direct pool', async function () {
    await requireRedis(this);
    g = await startTestGateway({ counters: 'redis', config: { database: { poolSize: 4 } } });
    expect(budgetIn(g)).to.deep.equal({ pool: 4, counterPool: 0, signal: 1, direct: 2, total: 7 });
    expect(g.pool.options.max).to.equal(4);
  });

  it('with PostgreSQL counters: their pool too; the default pool is 10', async () => {
    g = await startTestGateway({ counters: 'postgres' });
    expect(budgetIn(g)).to.deep.equal({ pool: 10, counterPool: 5, signal: 1, direct: 2, total: 18 });
  });
});
