import { expect } from 'chai';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createPolicyEngine, decisionKey, type PolicyEngine } from '../../../src/policy/engine.ts';
import { decisionAsServed, refusalOf, subjectOf, type PolicyCaller } from '../../../src/policy/refusal.ts';
import { parseScopes } from '../../../src/policy/scopes.ts';
import type { Pool } from '../../../src/store/db.ts';
import { generatedLines, generatedScopesText, ACTIONS, SCOPES } from '../../bench/generated-policy.ts';
import type { TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { until } from '../../support/until.ts';
import { loadConfig } from '../../../src/config.ts';
import { policyCli, twoInstances, type TwoInstances } from './support.ts';

// A policy of ten thousand lines made live by `keygate policy apply`, then rolled back and forth from
// the console, on two instances: every request sent to either is decided as node-casbin's enforcer
// decides it over the same lines, and the console's explain names the enforcer's line.

const LINES = 10_000;

const readyVersion = async (g: TestGateway): Promise<number> =>
  ((await (await fetch(`${g.url}/readyz`)).json()) as { policyVersion: number }).policyVersion;

/** The enforcer walks every line per question: each question is asked of it once. */
function memo(engine: PolicyEngine): PolicyEngine {
  const seen = new Map<string, ReturnType<PolicyEngine['decide']>>();
  const decide: PolicyEngine['decide'] = (subject, method, path) => {
    const k = decisionKey(subject, method, path);
    let d = seen.get(k);
    if (!d) seen.set(k, (d = engine.decide(subject, method, path)));
    return d;
  };
  return { ...engine, decide };
}

describe('a policy of ten thousand lines', function () {
  this.timeout(300_000);
  let pool: Pool;
  let files: TwoInstances['files'];
  let a: TestGateway;
  let b: TestGateway;
  let cli: TwoInstances['cli'];
  let dbUrl: string;
  twoInstances('kg_policy_10k', (s) => ({ pool, files, a, b, cli, db: { url: dbUrl } } = s));

  it('applied with the CLI and rolled back and forth in the console, decides every request as the enforcer does', async () => {
    const admin = await signUp(a.url, { name: 'Ada Admin' });
    await pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [admin.user.id]);
    expect((await cli('apply', '--message', 'shipped')).code).to.equal(0);
    // A reload that failed (a read past the query deadline on a busy machine) is retried by the
    // instance's check every five seconds; the test gateways run that worker by hand, so it does here.
    const loadedOnBoth = (version: number) => until(`version ${version} on both`, async () => {
      for (const g of [a, b]) if (g.policy.service.loaded.lagReason !== null) await g.policy.service.check();
      return (await readyVersion(a)) === version && (await readyVersion(b)) === version;
    }, 20_000);

    const shipped = await readFile(files.file, 'utf8');
    // The generator has 9,920 distinct lines; a few more of its own fill the policy up to ten thousand.
    const generated = generatedLines(9_920);
    const more = LINES - generated.length - shipped.split('\n').filter((l) => l.startsWith('p,')).length;
    const extra = Array.from({ length: more }, (_, i) => `p, key, perm:${SCOPES[i % SCOPES.length]}:${ACTIONS[1]}, ^PATCH$, /api/extra/${i}/:id, allow, extra.${i}`);
    const policyText = `${shipped}\n${[...generated, ...extra].join('\n')}\n`;
    const scopesText = generatedScopesText();
    await writeFile(files.file, policyText);
    await writeFile(join(files.dir, 'scopes.yaml'), scopesText);
    // The CLI configured with the scopes file beside the policy, as an operator's keygate.yaml would name it.
    const config = loadConfig({ env: { DATABASE_URL: dbUrl }, overrides: { policy: { file: files.file, model: files.model, scopes: join(files.dir, 'scopes.yaml') } } });
    const applied = await policyCli(pool, config, ['apply', '--message', 'ten thousand lines']);
    expect(applied.code, applied.out + applied.err).to.equal(0);
    await loadedOnBoth(2);

    const compiled = await createPolicyEngine(await readFile(files.model, 'utf8'), policyText, { scopes: parseScopes(scopesText) });
    expect(compiled.rules.length).to.equal(LINES);
    const reference = memo({ ...compiled, ...(await compiled.reference()) });

    const owner = await signUp(a.url, { name: 'Key Owner' });
    const held = { [SCOPES[0]!]: [ACTIONS[0]!], [SCOPES[3]!]: [ACTIONS[1]!, ACTIONS[2]!] };
    // Fresh keys for each version checked: the default plan's quota is 100 requests a day per key.
    const newKey = async (body: Record<string, unknown>): Promise<string> => {
      const r = await owner.client.post('/api/api-keys', body);
      expect(r.status, r.text).to.equal(201);
      return r.body.key;
    };
    const keys = { scoped: await newKey({ name: 'scoped', permissions: held }), plain: await newKey({ name: 'plain' }) };
    const callers: { name: string; caller: PolicyCaller; client: (url: string) => Client; ask: Record<string, unknown> }[] = [
      {
        name: 'scoped key', caller: { kind: 'key', user: { role: 'user' }, key: { permissions: held } },
        client: (url) => new Client(url).withKey(keys.scoped), ask: { subject: 'key', role: 'user', permissions: ['s00:a00', 's03:a01', 's03:a02'] },
      },
      {
        name: 'plain key', caller: { kind: 'key', user: { role: 'user' }, key: { permissions: {} } },
        client: (url) => new Client(url).withKey(keys.plain), ask: { subject: 'key', role: 'user' },
      },
      {
        name: 'session', caller: { kind: 'session', user: { role: 'user' } }, ask: { subject: 'session', role: 'user' },
        client: (url) => {
          const c = new Client(url);
          c.cookies.set('keygate_session', owner.client.cookies.get('keygate_session')!);
          return c;
        },
      },
      { name: 'anonymous', caller: { kind: 'anonymous' }, client: (url) => new Client(url), ask: { subject: 'anonymous' } },
    ];
    const paths: string[] = [];
    for (const s of [SCOPES[0]!, SCOPES[3]!]) {
      for (const act of [ACTIONS[s === SCOPES[0] ? 0 : 1]!]) {
        const base = `/api/${s}/${act}`;
        paths.push(base, `${base}/0badc0de`, `${base}/private`, `${base}/run`, `${base}/x/items/y`, `${base}/oauth-only/q`, `${base}/public`,
          `/api/${s}/shared/v2/z`, `${base}/${Math.random().toString(36).slice(2)}`);
      }
    }

    const check = async (engine: PolicyEngine, version: number, who = callers) => {
      const wrong: string[] = [];
      for (const c of who) {
        for (const path of paths) {
          for (const method of ['GET', 'PUT', 'DELETE']) {
            const g = paths.indexOf(path) % 2 === 0 ? a : b;
            const res = await c.client(g.url).request(method, path, method === 'GET' ? undefined : {});
            const refusal = refusalOf(engine, c.caller, method, path);
            const at = `v${version} ${c.name} ${method} ${path}`;
            if (refusal) {
              const status = refusal.code === 'UNAUTHENTICATED' ? 401 : 403;
              if (res.status !== status || res.body?.detail !== refusal.detail || res.body?.requiredPermission !== refusal.requiredPermission) {
                wrong.push(`${at}: ${res.status} ${res.text.slice(0, 200)}; the enforcer: ${JSON.stringify(refusal)}`);
              }
            } else if ((res.status === 401 || res.status === 403) && /route|API key|Sign in/.test(String(res.body?.detail))) {
              wrong.push(`${at}: ${res.status} ${res.body.detail}; the enforcer allows it`);
            }
            const expected = decisionAsServed(engine, subjectOf(c.caller), method, path).decision;
            const x = (await admin.client.post('/api/admin/policy/explain', { ...c.ask, method, path })).body;
            if (x.policyVersion !== version || (x.decidedBy?.id ?? null) !== expected.ruleId || x.decision !== (expected.allowed ? 'allow' : 'deny')) {
              wrong.push(`${at}: explain v${x.policyVersion} ${x.decision} by ${x.decidedBy?.id}; the enforcer ${expected.allowed} by ${expected.ruleId}`);
            }
          }
        }
      }
      expect(wrong, wrong.join('\n')).to.deep.equal([]);
    };
    await check(reference, 2);

    // From the console: back to the shipped lines, then to the ten thousand again.
    const shippedEngine = await createPolicyEngine(await readFile(files.model, 'utf8'), shipped);
    const shippedReference = memo({ ...shippedEngine, ...(await shippedEngine.reference()) });
    expect((await admin.client.post('/api/admin/policy/rollback', { version: 1 })).status).to.equal(200);
    await loadedOnBoth(3);
    // The scoped key keeps its stored permissions, which the shipped scopes do not declare.
    keys.plain = await newKey({ name: 'plain again' });
    await check(shippedReference, 3, callers.slice(1));
    expect((await admin.client.post('/api/admin/policy/rollback', { version: 2 })).status).to.equal(200);
    await loadedOnBoth(4);
    Object.assign(keys, { scoped: await newKey({ name: 'scoped again', permissions: held }), plain: await newKey({ name: 'plain, third' }) });
    await check(reference, 4);
  });
});
