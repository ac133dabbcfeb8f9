import { expect } from 'chai';
import pg from 'pg';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';

// An instance starting while another holds the policy lock (seeding, or applying a policy of
// thousands of lines) waits for it, however much longer than a request's database deadline that is.

const POLICY_LOCK = 0x6b670001;

describe('a gateway starting while another instance holds the policy lock', function () {
  this.timeout(30_000);
  let database: TestDatabase;
  let holder: pg.Client;
  let gw: TestGateway | undefined;
  before(async () => {
    database = await createTestDatabase('kg_startlock');
    holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
  });
  after(async () => {
    await gw?.stop();
    await holder.end().catch(() => undefined);
    await database.drop();
  });

  it('then it waits past the request deadline for the lock, starts and serves', async () => {
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock($1)', [POLICY_LOCK]);
    let started = false;
    const starting = startTestGateway({ database, config: { database: { queryTimeoutMs: 200 } } }).then((g) => {
      started = true;
      return g;
    });
    // Four request deadlines later the lock is still held and the gateway still waits, alive.
    const failedEarly = await Promise.race([starting.then(() => null, (e: Error) => e), new Promise((r) => setTimeout(r, 800, null))]);
    expect(failedEarly, 'the start failed while the lock was held').to.equal(null);
    expect(started, 'started while another instance held the policy lock').to.equal(false);
    await holder.query('COMMIT');
    gw = await starting;
    const ready = await fetch(`${gw.url}/readyz`);
    expect(ready.status).to.equal(200);
    expect(((await ready.json()) as { policyVersion: number }).policyVersion).to.equal(0);
  });
});
