import { expect } from 'chai';
import pg from 'pg';
import { Writable } from 'node:stream';
import { createPostgresCounters } from '../../../src/store/quota/postgres-counters.ts';
import { failedCreate } from '../../../src/services/keys/mint.ts';
import { createQuotaSpender } from '../../../src/services/quota/lease.ts';
import type { QuotaBlockStore } from '../../../src/store/quota/engine.ts';
import { createLogger, swallowedReporter } from '../../../src/log.ts';
import type { SwallowedKind } from '../../../src/errors.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { until } from '../../support/until.ts';

// A best-effort cleanup that fails is let go, but never silently: it is reported by kind, and the
// request it rode on answers as if the cleanup had not been there.

describe('errors let go by best-effort cleanups', function () {
  this.timeout(20_000);
  let db: TestDatabase;
  let pool: pg.Pool;
  before(async () => {
    db = await createTestDatabase('swallow');
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    // The counters' table, whose rows refuse to be deleted: every sweep of old windows fails.
    await pool.query(`CREATE TABLE counters (name text NOT NULL, window_start timestamptz NOT NULL, value bigint NOT NULL DEFAULT 0,
      expires_at timestamptz NOT NULL, PRIMARY KEY (name, window_start));
      CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no deletes here'; END $$;
      CREATE TRIGGER refuse_delete BEFORE DELETE ON counters FOR EACH STATEMENT EXECUTE FUNCTION refuse();`);
  });
  after(async () => {
    await pool.end();
    await db.drop();
  });

  it('when the sweep of old counter windows fails, the count is still answered and the failure is reported', async () => {
    const heard: [SwallowedKind, string][] = [];
    const counters = createPostgresCounters(pool, () => 120_000, (what, e) => heard.push([what, (e as Error).message]));
    expect(await counters.increment('swallow:a', new Date(0), 60)).to.equal(1);
    await until('the failed sweep is reported', () => heard.length > 0, 5_000);
    expect(heard).to.deep.equal([['counter-sweep', 'no deletes here']]);
  });

  it('when a failed create cannot give its daily create back, the create\'s own error is thrown and the give-back reported', async () => {
    const heard: SwallowedKind[] = [];
    await pool.query('ALTER TABLE counters RENAME TO counters_gone');
    try {
      const counters = createPostgresCounters(pool);
      const original = new Error('the create failed');
      const thrown = await failedCreate(original, { counters, userId: 'u1', day: new Date(0), swallowed: (what) => heard.push(what) }).catch((e) => e);
      expect(thrown).to.equal(original);
      expect(heard).to.deep.equal(['create-give-back']);
    } finally {
      await pool.query('ALTER TABLE counters_gone RENAME TO counters');
    }
  });

  it('when the claim of a leased block\'s next part fails, requests are still answered and the failure is reported', async () => {
    const heard: [SwallowedKind, string][] = [];
    const at = new Date('2026-01-01T12:00:00Z');
    // A block store that leases a block of 100 (10 claimed at once) and refuses every later claim.
    let counted = 0;
    const blocks: QuotaBlockStore = {
      spendOne: async () => ++counted,
      lease: async (_n, _w, want, _l, _f, _t, terms) =>
        ({ id: terms.id, granted: want, claimed: terms.claim, counted: (counted += want) }),
      claim: async () => { throw new Error('the claim failed'); },
      handBack: async () => {},
    };
    const quota = createQuotaSpender({
      counters: createPostgresCounters(pool), blocks, clock: () => at, floor: 10, blockSize: 100, claimSize: 10, sweepIntervalMs: 0,
      swallowed: (what, e) => heard.push([what, (e as Error).message]),
    });
    try {
      // The first request is counted alone, the second leases; the block's part runs low and the next is claimed.
      for (let i = 0; i < 8; i++) expect((await quota.spend('swallow:lease', 1000, at)).allowed).to.equal(true);
      await until('the failed claim is reported', () => heard.length > 0, 5_000);
      expect(heard).to.deep.equal([['block-claim', 'the claim failed']]);
    } finally {
      await quota.close();
    }
  });

  it('the composition root counts every one and logs the first of each kind', () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _enc, done) => void (lines.push(String(chunk)), done()) });
    const counted: string[] = [];
    const report = swallowedReporter(createLogger('info', sink), (what) => counted.push(what));
    report('counter-sweep', new Error('one'));
    report('counter-sweep', new Error('two'));
    report('block-hand-back', new Error('three'));
    expect(counted).to.deep.equal(['counter-sweep', 'counter-sweep', 'block-hand-back']);
    expect(lines.map((l) => JSON.parse(l).what)).to.deep.equal(['counter-sweep', 'block-hand-back']);
  });
});
