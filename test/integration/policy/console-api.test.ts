import { expect } from 'chai';
import type { Pool } from '../../../src/store/db.ts';
import { Client, signUp } from '../../support/http.ts';
import type { TestGateway } from '../../support/gateway.ts';
import { until } from '../../support/until.ts';
import { root, twoInstances, type TwoInstances } from './support.ts';
import { diffCommand } from '../../../src/cli/policy/diff.ts';
import { explainCommand } from '../../../src/cli/policy/explain.ts';

// The operator console's HTTP API against two gateways on one store, and the CLI beside it: the
// console and `keygate policy …` must give the same answers.

const CLOSE_PROJECTS = 'p, key, *, .*, /api/projects/**, deny, key.projects-closed';

async function readyVersion(g: TestGateway): Promise<number> {
  return ((await (await fetch(`${g.url}/readyz`)).json()) as { policyVersion: number }).policyVersion;
}

async function adminOf(g: TestGateway, pool: Pool) {
  const s = await signUp(g.url, { name: 'Ada Admin' });
  await pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [s.user.id]);
  return s;
}

async function auditOf(pool: Pool, type: string) {
  return (await pool.query('SELECT actor_user_id, actor, owner_user_id, key_id, detail FROM audit_log WHERE type = $1 ORDER BY id', [type])).rows;
}

describe('the operator console API', () => {
  let pool: Pool;
  let files: TwoInstances['files'];
  let a: TestGateway;
  let b: TestGateway;
  let cli: TwoInstances['cli'];
  twoInstances('kg_console', (s) => ({ pool, files, a, b, cli } = s));

  it('a rollback through the API reaches both instances within a second, audited with the admin as actor', async () => {
    const admin = await adminOf(a, pool);
    expect((await cli('apply')).code).to.equal(0);
    await files.append(CLOSE_PROJECTS);
    expect((await cli('apply', '--force')).code).to.equal(0);
    await until('version 2 on both', async () => (await readyVersion(a)) === 2 && (await readyVersion(b)) === 2, 1000);

    const r = await admin.client.post('/api/admin/policy/rollback', { version: 1 });
    expect(r.status).to.equal(200);
    expect(r.body).to.include({ status: 'applied', version: 3 });
    await until('the rollback on both', async () => (await readyVersion(a)) === 3 && (await readyVersion(b)) === 3, 1000);

    const applied = await auditOf(pool, 'POLICY_APPLIED');
    expect(applied.map((e) => [e.actor, e.actor_user_id, e.detail.version])).to.deep.equal([['cli', null, 1], ['cli', null, 2]]);
    const rolled = await auditOf(pool, 'POLICY_ROLLED_BACK');
    expect(rolled).to.have.length(1);
    expect(rolled[0]).to.deep.include({ actor: null, actor_user_id: admin.user.id });
    expect(rolled[0].detail).to.include({ version: 3, rollbackTo: 1, message: 'rollback to 1' });

    // A rollback the CLI makes is the CLI's.
    expect((await cli('rollback', '2')).code).to.equal(0);
    expect((await auditOf(pool, 'POLICY_ROLLED_BACK'))[1]).to.deep.include({ actor: 'cli', actor_user_id: null });
  });

  it('answers as the CLI does: versions and history, changes and diff, fleet and status, explain', async () => {
    const admin = await adminOf(a, pool);
    await cli('apply', '--message', 'first');
    await files.append(CLOSE_PROJECTS);
    await cli('apply', '--force', '--message', 'close projects');
    await until('version 2 on both', () => a.policy.service.loaded.version === 2 && b.policy.service.loaded.version === 2, 1000);

    const history = JSON.parse((await cli('history', '--json')).out);
    const versions = (await admin.client.get('/api/admin/policy/versions')).body;
    expect(versions).to.deep.equal({ live: history.live, versions: history.versions });

    const texts = (await admin.client.get('/api/admin/policy/versions/2')).body;
    expect(texts.texts.policy).to.include(CLOSE_PROJECTS);
    expect((await admin.client.get('/api/admin/policy/versions/9')).status).to.equal(404);
    expect((await admin.client.get('/api/admin/policy/versions/x')).status).to.equal(404);

    // The decisions version 2 changed are the lines `policy diff` prints between the two texts.
    const changes = (await admin.client.get('/api/admin/policy/versions/2/changes')).body;
    expect(changes.against).to.equal(1);
    expect(changes.decisions.length).to.be.greaterThan(0);
    expect(changes.decisions.every((d: { before: string; after: string }) => d.before.startsWith('allow') && d.after.startsWith('deny (key.projects-closed)'))).to.equal(true);
    const v1 = (await admin.client.get('/api/admin/policy/versions/1')).body.texts;
    const { writeFile } = await import('node:fs/promises');
    const oldFile = `${files.dir}/old.csv`;
    await writeFile(oldFile, v1.policy);
    let diffOut = '';
    await diffCommand([oldFile, files.file, '--model', files.model, '--json'], { stdout: (t: string) => void (diffOut += t), stderr: () => {}, cwd: root });
    const diff = JSON.parse(diffOut);
    const routeKeys = (ds: { request: string; subjects: string[]; after: string }[]) => ds.map((d) => `${d.request} ${d.subjects.join(',')} ${d.after}`);
    // The CLI adds the suites' own cases to the requests compared; every change the console names, the CLI names too.
    expect(routeKeys(diff.decisions)).to.include.members(routeKeys(changes.decisions));

    await a.policy.heartbeat.beat();
    await b.policy.heartbeat.beat();
    const status = JSON.parse((await cli('status', '--json')).out);
    const fleet = (await admin.client.get('/api/admin/fleet')).body;
    const byId = (xs: { instanceId: string }[]) => [...xs].sort((x, y) => x.instanceId.localeCompare(y.instanceId));
    expect({ ...fleet, instances: byId(fleet.instances) }).to.deep.equal({ ...status, instances: byId(status.instances) });

    for (const ask of [
      { subject: 'key', path: '/api/projects', method: 'GET', cli: ['--subject', 'key'] },
      { subject: 'session', role: 'admin', path: '/api/admin/api-keys', method: 'GET', cli: ['--subject', 'session', '--role', 'admin'] },
      { subject: 'anonymous', path: '/api/admin/api-keys', method: 'DELETE', cli: ['--subject', 'anonymous'] },
    ]) {
      const { cli: flags, ...body } = ask;
      let out = '';
      await explainCommand([...flags, '--method', ask.method, '--path', ask.path, '--policy', files.file, '--model', files.model, '--json'], { stdout: (t: string) => void (out += t), stderr: () => {}, cwd: root });
      const fromCli = JSON.parse(out);
      const fromApi = (await admin.client.post('/api/admin/policy/explain', body)).body;
      for (const k of ['decision', 'decidedBy', 'requiredPermission', 'alsoMatched', 'subject', 'method', 'path'] as const) expect(fromApi[k], k).to.deep.equal(fromCli[k]);
    }
  });

  it('the shadow candidate: report, promote (audited) and drop', async () => {
    const admin = await adminOf(a, pool);
    await cli('apply');
    expect((await admin.client.get('/api/admin/policy/shadow')).body).to.deep.equal({ candidate: null, divergences: [] });
    expect((await admin.client.post('/api/admin/policy/shadow/promote', {})).status).to.equal(404);
    expect((await admin.client.delete('/api/admin/policy/shadow')).status).to.equal(404);
    await files.append(CLOSE_PROJECTS);
    expect((await cli('apply', '--shadow', '--force', '--message', 'try closing')).code).to.equal(0);
    const report = (await admin.client.get('/api/admin/policy/shadow')).body;
    expect(report.candidate).to.include({ message: 'try closing' });
    expect((await admin.client.get('/api/admin/policy')).body.candidate.id).to.equal(report.candidate.id);
    const promoted = await admin.client.post('/api/admin/policy/shadow/promote', {});
    expect(promoted.body).to.include({ status: 'applied', version: 2 });
    const entry = (await auditOf(pool, 'POLICY_PROMOTED'))[0];
    expect(entry).to.deep.include({ actor_user_id: admin.user.id });
    expect(entry.detail).to.include({ version: 2, candidate: report.candidate.id });
    await until('version 2 on b', async () => (await readyVersion(b)) === 2, 1000);

    await cli('apply', '--shadow', '--force');
    expect((await admin.client.delete('/api/admin/policy/shadow')).status).to.equal(204);
    expect((await admin.client.get('/api/admin/policy')).body.candidate).to.equal(null);
  });

  it('refuses keys (even an admin\'s), non-admin sessions and anonymous callers on every console route', async () => {
    const admin = await adminOf(a, pool);
    const user = await signUp(a.url);
    const adminKey = (await admin.client.post('/api/api-keys', { name: 'k' })).body.key as string;
    const routes: [string, string][] = [
      ['GET', '/api/admin/overview'], ['GET', '/api/admin/users'], ['POST', `/api/admin/users/${user.user.id}/role`], ['POST', `/api/admin/users/${user.user.id}/plan`],
      ['GET', '/api/admin/policy'], ['GET', '/api/admin/policy/versions'], ['GET', '/api/admin/policy/versions/0'], ['GET', '/api/admin/policy/versions/0/changes'],
      ['POST', '/api/admin/policy/rollback'], ['GET', '/api/admin/policy/shadow'], ['POST', '/api/admin/policy/shadow/promote'], ['DELETE', '/api/admin/policy/shadow'],
      ['POST', '/api/admin/policy/explain'], ['GET', '/api/admin/fleet'], ['GET', '/api/admin/usage'], ['GET', '/api/admin/audit-log/export'],
    ];
    const keyClient = new Client(a.url).withKey(adminKey);
    for (const [method, path] of routes) {
      const send = (c: Client) => (method === 'GET' ? c.get(path) : method === 'DELETE' ? c.delete(path) : c.post(path, {}));
      expect((await send(user.client)).status, `${method} ${path} as a user`).to.equal(403);
      expect((await send(keyClient)).status, `${method} ${path} with a key`).to.equal(403);
      expect((await send(new Client(a.url))).status, `${method} ${path} anonymous`).to.equal(401);
    }
    const spec = (await (await fetch(`${a.url}/api/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    for (const [method, path] of routes) {
      const templ = path.replace(/\/users\/[^/]+\//, '/users/{id}/').replace(/\/versions\/0/, '/versions/{v}');
      expect(spec.paths[templ]?.[method.toLowerCase()], `${method} ${templ} in openapi.json`).to.not.equal(undefined);
    }
  });
});
