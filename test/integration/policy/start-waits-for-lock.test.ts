import { expect } from 'chai';
import pg from 'pg';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { until } from '../../support/until.ts';

// An instance starting while another holds the policy lock (seeding, or applying a policy of
// thousands of lines) waits for it, however much longer than a request's database deadline that is.

const POLICY_LOCK = 0x6b670001;
const DEADLINE_MS = 1_000;

describe('a gateway starting while another instance holds the policy lock', function () {
  this.timeout(30_000);
  let database: TestDatabase;
  let holder: pg.Client;
  // Another session: inside the holder's transaction pg_stat_activity would stay as first read.
  let watcher: pg.Client;
  let starting: Promise<TestGateway> | undefined;
  before(async () => {
    database = await createTestDatabase('kg_startlock');
    holder = new pg.Client({ connectionString: database.url });
    watcher = new pg.Client({ connectionString: database.url });
    await Promise.all([holder.connect(), watcher.connect()]);
  });
  after(async () => {
    // Ending the holder's session lets a start still waiting finish: it is stopped before the drop.
    await Promise.all([holder.end(), watcher.end()].map((p) => p.catch(() => undefined)));
    await (await starting?.catch(() => undefined))?.stop();
    await database.drop();
  });

  it('then it waits past the request deadline for the lock, starts and serves', async () => {
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock($1)', [POLICY_LOCK]);
    starting = startTestGateway({ database, config: { database: { queryTimeoutMs: DEADLINE_MS } } });
    // The start's read of the policy waits on this very lock past three request deadlines, as
    // PostgreSQL itself reports it (the deadline would have cancelled it, and the start with it).
    const waited = until('the start waiting on the policy lock for three request deadlines', async () => {
      const { rows } = await watcher.query<{ n: number }>(
        `SELECT count(*)::int n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
          WHERE l.locktype = 'advisory' AND NOT l.granted AND l.classid = 0 AND l.objid = $1
            AND a.datname = current_database() AND now() - a.query_start > make_interval(secs => $2)`,
        [POLICY_LOCK, (3 * DEADLINE_MS) / 1000]);
      return rows[0]!.n === 1;
    }, 15_000);
    const ended = starting.then(() => 'started while another instance held the policy lock', (e: Error) => `the start failed: ${e.message}`);
    const early = await Promise.race([waited.then(() => null), ended]);
    expect(early, 'the start ended while the lock was held').to.equal(null);
    await holder.query('COMMIT');
    const gw = await starting;
    const ready = await fetch(`${gw.url}/readyz`);
    expect(ready.status).to.equal(200);
    expect(((await ready.json()) as { policyVersion: number }).policyVersion).to.equal(0);
    // Past LOCK_WAIT_TOLD_MS the wait was told, once: a long one must not look like a hung start.
    expect(gw.logs.filter((l) => l.includes('waiting for the policy lock'))).to.have.length(1);
  });
});
