import { expect } from 'chai';
import pg from 'pg';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { until } from '../../support/until.ts';

// An instance starting while another holds the policy lock (seeding, or applying a policy of
// thousands of lines) waits for it, however much longer than a request's database deadline that is.

const POLICY_LOCK = 0x6b670001;

describe('a gateway starting while another instance holds the policy lock', function () {
  this.timeout(30_000);
  let database: TestDatabase;
  let holder: pg.Client;
  // Another session: inside the holder's transaction pg_stat_activity would stay as first read.
  let watcher: pg.Client;
  let gw: TestGateway | undefined;
  before(async () => {
    database = await createTestDatabase('kg_startlock');
    holder = new pg.Client({ connectionString: database.url });
    watcher = new pg.Client({ connectionString: database.url });
    await Promise.all([holder.connect(), watcher.connect()]);
  });
  after(async () => {
    await gw?.stop();
    await Promise.all([holder.end(), watcher.end()].map((p) => p.catch(() => undefined)));
    await database.drop();
  });

  it('then it waits past the request deadline for the lock, starts and serves', async () => {
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock($1)', [POLICY_LOCK]);
    let started = false;
    let failed: Error | null = null;
    const starting = startTestGateway({ database, config: { database: { queryTimeoutMs: 200 } } }).then((g) => {
      started = true;
      return g;
    }, (e: Error) => {
      failed = e;
      throw e;
    });
    starting.catch(() => undefined);
    // The start's read of the policy waits on the lock past four request deadlines, as PostgreSQL
    // itself reports it (a deadline would have cancelled it at 200 ms, and the start with it).
    await until('the start waiting on the policy lock for 800 ms', async () => {
      if (failed) throw failed;
      const { rows } = await watcher.query<{ n: number }>(
        `SELECT count(*)::int n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'
            AND now() - query_start > interval '800 ms'`);
      return rows[0]!.n === 1;
    }, 10_000);
    expect(started, 'started while another instance held the policy lock').to.equal(false);
    await holder.query('COMMIT');
    gw = await starting;
    const ready = await fetch(`${gw.url}/readyz`);
    expect(ready.status).to.equal(200);
    expect(((await ready.json()) as { policyVersion: number }).policyVersion).to.equal(0);
  });
});
