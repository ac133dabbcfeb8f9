import { resolve } from 'node:path';
import { readFile, writeFile } from 'node:fs/promises';
import { expect } from 'chai';
import pg from 'pg';
import { createPool, withTransaction, type Pool } from '../../../src/store/db.ts';
import { migrate } from '../../../src/store/migrate.ts';
import { readStoredRules, replaceRules } from '../../../src/store/casbin.ts';
import { CHANNEL } from '../../../src/store/notify.ts';
import { applyPolicy, createPolicyService, readPolicyFiles } from '../../../src/services/policy/index.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { tempDir } from '../../support/tmp.ts';
import { until } from '../../support/until.ts';

// The policy service alone, on a real database: what the gateway's reload relies on.

const root = resolve(import.meta.dirname, '../../..');
const MODEL = resolve(root, 'policies/model.conf');
const VARIANT_A = resolve(root, 'policies/variant-a.csv');
const migrations = resolve(root, 'migrations');
const KEY = { kind: 'key', permissions: [], role: 'user' } as const;
const DENY_PROJECTS = 'p, key, *, .*, /api/projects/**, deny, key.projects-closed';

describe('policy service', () => {
  let db: TestDatabase;
  let pool: Pool;
  let closedPolicy: string;

  beforeEach(async () => {
    db = await createTestDatabase('kg_policysvc');
    pool = createPool(db.url);
    await migrate(pool, migrations);
    closedPolicy = resolve(tempDir('kg-policysvc-'), 'closed.csv');
    await writeFile(closedPolicy, `${await readFile(VARIANT_A, 'utf8')}\n${DENY_PROJECTS}\n`);
  });
  afterEach(async () => {
    await pool.end();
    await db.drop();
  });

  const projectsOpen = (svc: ReturnType<typeof createPolicyService>) => svc.holder.current.decide(KEY, 'GET', '/api/projects').allowed;

  it('when the store is empty, then bootstrap seeds it from the files and puts them in force', async () => {
    const svc = createPolicyService({ pool, files: { model: MODEL, file: VARIANT_A } });
    expect(await svc.bootstrap()).to.deep.equal({ seeded: true, differsFromFiles: false });
    expect(projectsOpen(svc)).to.equal(true);
  });

  it('when a reload is asked for before bootstrap, then it runs right after the first read', async () => {
    let reads = 0;
    const counting = createPolicyService({ pool, files: { model: MODEL, file: VARIANT_A }, readRules: (p, m) => (reads++, readStoredRules(p, m)) });
    await counting.reload();
    await counting.bootstrap();
    expect(reads).to.equal(1);
  });

  it('when a reload is asked for while another runs, then it reads the store after that one: the newest policy ends in force', async () => {
    let holdFirst!: () => void;
    const firstHeld = new Promise<void>((ok) => (holdFirst = ok));
    let firstRead!: () => void;
    const firstReadDone = new Promise<void>((ok) => (firstRead = ok));
    let calls = 0;
    const svc = createPolicyService({
      pool,
      files: { model: MODEL, file: VARIANT_A },
      readRules: async (p, m) => {
        const rules = await readStoredRules(p, m);
        // The first reload read the open policy; it answers only after the second has swapped in.
        if (++calls === 1) {
          firstRead();
          await firstHeld;
        }
        return rules;
      },
    });
    await svc.bootstrap();
    const first = svc.reload();
    await firstReadDone;
    await applyPolicy(pool, await readPolicyFiles({ model: MODEL, file: closedPolicy }), { by: 'test', message: '' });
    const second = svc.reload();
    holdFirst();
    await first;
    await second;
    expect(projectsOpen(svc)).to.equal(false);
    expect(calls).to.equal(2);
  });

  it('when reloads are asked for faster than one completes, then the newest policy still comes into force while they go on', async () => {
    // Each read waits on PostgreSQL for 200 ms: a store (or a build) slower than the schedule asking.
    let slow = false;
    const svc = createPolicyService({
      pool,
      files: { model: MODEL, file: VARIANT_A },
      readRules: async (p, m) => {
        if (slow) await p.query('SELECT pg_sleep(0.2)');
        return readStoredRules(p, m);
      },
    });
    await svc.bootstrap();
    slow = true;
    await applyPolicy(pool, await readPolicyFiles({ model: MODEL, file: closedPolicy }), { by: 'test', message: '' });
    const asked: Promise<void>[] = [];
    // A reload asked for on every look, every 50 ms: each would have superseded the one before.
    await until('the applied policy in force while reloads keep coming', () => {
      asked.push(svc.reload());
      return !projectsOpen(svc);
    }, 3_000, 50);
    await Promise.all(asked);
  });

  it('when a reload fails, then the policy in force stays', async () => {
    const svc = createPolicyService({ pool, files: { model: MODEL, file: VARIANT_A } });
    await svc.bootstrap();
    const before = svc.holder.current;
    await pool.query(`INSERT INTO casbin (ptype, rule) VALUES ('p', '["key","*",".*","/api/x/**","maybe","bad"]'::jsonb)`);
    await svc.reload();
    expect(svc.holder.current).to.equal(before);
  });

  it('when apply is given a policy with a malformed line, then nothing is stored', async () => {
    const svc = createPolicyService({ pool, files: { model: MODEL, file: VARIANT_A } });
    await svc.bootstrap();
    const broken = resolve(tempDir('kg-policysvc-'), 'broken.csv');
    await writeFile(broken, 'p, key, *, .*, /api/x/**, maybe, bad\n');
    const before = (await pool.query('SELECT rule FROM casbin ORDER BY id')).rows;
    let failed = false;
    await applyPolicy(pool, await readPolicyFiles({ model: MODEL, file: broken }), { by: 'test', message: '' }).catch(() => (failed = true));
    expect(failed).to.equal(true);
    expect((await pool.query('SELECT rule FROM casbin ORDER BY id')).rows).to.deep.equal(before);
  });

  describe('signalling the fleet is a step of the caller, not a side effect of the store', () => {
    let listener: pg.Client;
    let heard: string[];
    beforeEach(async () => {
      heard = [];
      listener = new pg.Client({ connectionString: db.url });
      await listener.connect();
      listener.on('notification', (n) => heard.push(n.payload ?? ''));
      await listener.query(`LISTEN ${CHANNEL}`);
    });
    afterEach(async () => {
      await listener.end();
    });

    // Notifications arrive in commit order: once a marker sent afterwards is heard, so is every earlier one.
    // Each signal carries the number of its row in the change record, recorded with it.
    const signalsSoFar = async (): Promise<{ type: string; recorded: boolean }[]> => {
      const marker = JSON.stringify({ type: 'marker', n: heard.length });
      await pool.query('SELECT pg_notify($1, $2)', [CHANNEL, marker]);
      await until('the marker arrives', () => heard.includes(marker), 5_000);
      const out = heard.filter((h) => !h.includes('"marker"')).map((h) => JSON.parse(h) as { type: string; change: number });
      heard = [];
      return Promise.all(out.map(async ({ type, change }) => ({
        type, recorded: (await pool.query('SELECT 1 FROM changes WHERE id = $1 AND kind = $2', [change, type])).rowCount === 1,
      })));
    };

    it('when the stored lines are replaced alone, no instance is told; an apply tells them once; an apply of what is live tells nobody', async () => {
      const texts = await readPolicyFiles({ model: MODEL, file: closedPolicy });
      await withTransaction(pool, (tx) => replaceRules(tx, []));
      expect(await signalsSoFar()).to.deep.equal([]);
      expect((await applyPolicy(pool, texts, { by: 'test', message: '' })).status).to.equal('applied');
      expect(await signalsSoFar()).to.deep.equal([{ type: 'policy', recorded: true }]);
      expect((await applyPolicy(pool, texts, { by: 'test', message: '' })).status).to.equal('already-live');
      expect(await signalsSoFar()).to.deep.equal([]);
    });

    it('when the first start seeds an empty store, the instances are told', async () => {
      await createPolicyService({ pool, files: { model: MODEL, file: VARIANT_A } }).bootstrap();
      expect(await signalsSoFar()).to.deep.equal([{ type: 'policy', recorded: true }]);
    });
  });
});
