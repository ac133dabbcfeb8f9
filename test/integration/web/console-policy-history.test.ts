import { readFile } from 'node:fs/promises';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { join } from 'node:path';
import { expect } from 'chai';
import { applyPolicy } from '../../../src/services/policy/versions.ts';
import { packageRoot } from '../../../src/config.ts';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUp, signUpAdmin, type Client } from '../../support/http.ts';
import { until } from '../../support/until.ts';

// The policy's history in the console: version 0 is what the first start seeded, from that moment;
// and a page listing twenty versions answers at once while the decisions each changed are worked
// out once, without holding up the key requests the same instance serves meanwhile.

describe('web: the console policy history', function () {
  this.timeout(180_000);
  let gw: TestGateway;
  let admin: Client;
  let keyClient: Client;
  before(async () => {
    gw = await startTestGateway();
    const a = await signUpAdmin(gw, { name: 'Ada Admin' });
    admin = a.client;
    const owner = await signUp(gw.url, { name: 'Key Owner' });
    keyClient = owner.client.withKey((await owner.client.post('/api/api-keys', { name: 'steady' })).body.key as string);
  });
  after(async () => gw?.stop());

  const files = async () => ({
    model: await readFile(join(packageRoot, 'policies/model.conf'), 'utf8'),
    policy: await readFile(join(packageRoot, 'policies/variant-a.csv'), 'utf8'),
    scopes: await readFile(join(packageRoot, 'policies/scopes.yaml'), 'utf8'),
  });

  it('before any apply, version 0 is listed with its time and message, and answers the seeded texts', async () => {
    const list = await admin.get('/api/admin/policy/versions');
    expect(list.status).to.equal(200);
    expect(list.body.live).to.equal(0);
    expect(list.body.versions).to.have.length(1);
    expect(list.body.versions[0]).to.include({ version: 0, message: 'seeded from files at first start', appliedBy: 'keygate' });
    expect(Date.parse(list.body.versions[0].appliedAt)).to.be.a('number').and.not.NaN;
    const zero = await admin.get('/api/admin/policy/versions/0');
    expect(zero.status).to.equal(200);
    // The files as they were, comments included.
    expect(zero.body.texts).to.deep.equal(await files());
    expect((await admin.get('/api/admin/policy')).body.live).to.include({ version: 0 });
  });

  it('a page of twenty versions answers now, the key requests beside it keep answering, and each version\'s changes are kept once', async () => {
    const base = await files();
    for (let i = 1; i <= 20; i++) {
      // Every fifth version closes /api/projects for keys, the next opens it again: real changes.
      const closed = i % 5 === 0 ? 'p, key, *, .*, /api/projects/**, deny, key.projects-closed\n' : '';
      await applyPolicy(gw.pool, { ...base, policy: `${base.policy}${closed}# revision ${i}\n` }, { by: 'test', message: `revision ${i}` }, { source: `revision ${i}` });
    }
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    let keyAnswers = 0;
    const keyFailures: number[] = [];
    let stop = false;
    // Steady traffic of one key beside the work, a request about every 100 ms, until both the work
    // is done and the key requests have had their say.
    const steady = until('every version\'s changes kept, key requests answered beside it', async () => {
      const r = await keyClient.get('/api/auth/get-session');
      // The key's quota runs out (429) partway: still an answer from an instance that is not held up.
      if (r.status === 200 || r.status === 429) keyAnswers++;
      else keyFailures.push(r.status);
      return stop || (keyAnswers > 20 && (await gw.pool.query('SELECT count(*)::int n FROM policy_version_changes')).rows[0].n >= 20);
    }, 150_000, 100);
    try {
      const page = await admin.get('/admin/policy', { accept: 'text/html' });
      expect(page.status).to.equal(200);
      expect(page.text).to.include('Version 20');
      expect(page.text).to.include('are being worked out');
      await steady;
    } finally {
      stop = true;
      await steady.catch(() => {});
      loop.disable();
    }
    expect(keyFailures).to.deep.equal([]);
    expect(keyAnswers).to.be.greaterThan(20);
    // Working out one version in one go held the loop for about a second, twenty for many: a
    // generous bound that only slices giving the loop back can keep.
    expect(loop.max / 1e6, 'longest event-loop stall, ms').to.be.lessThan(1000);

    const again = await admin.get('/admin/policy', { accept: 'text/html' });
    expect(again.text).not.to.include('are being worked out');
    expect(again.text).to.match(/decisions changed against version 4/);
    // The API answers the kept changes, the same as the page.
    const v5 = await admin.get('/api/admin/policy/versions/5/changes');
    expect(v5.body.against).to.equal(4);
    expect(v5.body.decisions.some((d: { request: string }) => d.request.startsWith('GET /api/projects'))).to.equal(true);
    const rows = (await gw.pool.query('SELECT version FROM policy_version_changes ORDER BY version')).rows.map((r) => r.version);
    expect(rows).to.deep.equal([...new Set(rows)]);
  });

  it('a rollback through the API keeps the message given, and is audited with it', async () => {
    const r = await admin.post('/api/admin/policy/rollback', { version: 0, message: 'back to the shipped files' });
    expect(r.status).to.equal(200);
    const live = (await admin.get('/api/admin/policy')).body.live;
    expect(live).to.include({ version: r.body.version, message: 'back to the shipped files' });
    const audit = (await gw.pool.query("SELECT detail FROM audit_log WHERE type = 'POLICY_ROLLED_BACK'")).rows;
    expect(audit[0].detail).to.include({ rollbackTo: 0, message: 'back to the shipped files' });
    expect((await admin.post('/api/admin/policy/rollback', { version: 0, message: 'x'.repeat(501) })).status).to.equal(400);
  });
});
