import { expect } from 'chai';
import pg from 'pg';
import { startSilenceableProxy, until, type SilenceableProxy } from '../../support/engines.ts';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { Client, signUp } from '../../support/http.ts';
import { signal } from '../../../src/store/notify.ts';
import { applyPolicy, readPolicyFiles } from '../../../src/services/policy/index.ts';

// A LISTEN connection that goes silent without closing (a NAT or pooler forgetting
// it) is noticed by the periodic check and replaced, so a revocation made elsewhere still reaches
// the instance within 10 s, not after the 60 s the key cache would otherwise keep it.
// The instance catches up on what it missed from the change record instead of
// emptying its caches, so the first requests after a reconnect cost no more lookups than before.

async function misses(gw: TestGateway): Promise<number> {
  const text = (await new Client(gw.url).get('/metrics')).text;
  return Number(/^keygate_key_lookups_total\{result="miss"\} (\d+)/m.exec(text)?.[1] ?? 0);
}

/** Creates `n` keys on `gw`, ten per user (the default limit): their ids, plaintexts and owners. */
async function createKeys(gw: TestGateway, n: number): Promise<{ id: string; key: string; owner: Client }[]> {
  const out: { id: string; key: string; owner: Client }[] = [];
  let client: Client | null = null;
  for (let i = 0; i < n; i++) {
    if (i % 10 === 0) client = (await signUp(gw.url)).client;
    const created = (await client!.post('/api/api-keys', { name: `k${i}` })).body as { id: string; key: string };
    out.push({ id: created.id, key: created.key, owner: client! });
  }
  return out;
}

const statusOf = async (gw: TestGateway, key: string) => (await new Client(gw.url).withKey(key).get('/api/auth/get-session')).status;

describe('a silently cut signal channel', () => {
  let database: TestDatabase;
  let proxy: SilenceableProxy;
  let listening: TestGateway;
  let other: TestGateway;

  before(async function () {
    this.timeout(60_000);
    database = await createTestDatabase();
    const direct = new URL(database.url);
    proxy = await startSilenceableProxy(direct.hostname, Number(direct.port || 5432));
    const viaProxy = new URL(database.url);
    viaProxy.host = `127.0.0.1:${proxy.port}`;
    // Only this instance's LISTEN (and migrations) go through the proxy; its requests do not.
    listening = await startTestGateway({ database, env: { DATABASE_DIRECT_URL: viaProxy.toString() } });
    other = await startTestGateway({ database });
  });
  after(async () => {
    await listening?.stop();
    await other?.stop();
    await proxy?.stop();
    await database?.drop();
  });

  /** Silences the channel and waits until the instance has reconnected and caught up; answers the log lines since. */
  async function cutAndReconnect(whileCut: () => Promise<void> = async () => {}): Promise<string[]> {
    const from = listening.logs.length;
    proxy.silenceOpen();
    await whileCut();
    await listening.waitForLog(/signal channel reconnected/, { from, timeoutMs: 15_000 });
    return listening.logs.slice(from);
  }

  it('when the channel stops passing bytes without closing, then a key revoked on another instance is refused here within 10 s, caught up from the change record', async function () {
    this.timeout(30_000);
    const { client } = await signUp(other.url);
    const created = (await client.post('/api/api-keys', { name: 'cut' })).body;
    const key = new Client(listening.url).withKey(created.key);
    // Cached on the listening instance: from now on only a signal or a reconnect can stop it.
    expect((await key.get('/api/auth/get-session')).status).to.equal(200);

    proxy.silenceOpen();
    const revokedAt = Date.now();
    expect((await client.delete(`/api/api-keys/${created.id}`)).status).to.equal(204);
    const took = await until('the revocation reaches the instance', async () => (await key.get('/api/auth/get-session')).status === 401, 10_000, 200);
    expect(Date.now() - revokedAt).to.be.below(10_000);
    expect(took).to.be.below(10_000);
    expect(listening.logs.some((l) => l.includes('signal channel reconnected: caught up on'))).to.equal(true);
    expect(listening.logs.some((l) => l.includes('dropped cached keys'))).to.equal(false);
    console.log(`      (revocation reached the instance ${Date.now() - revokedAt} ms after the channel went silent)`);
  });

  it('when the channel comes back, then the first requests of 50 cached keys cost no more database lookups than the same requests before it', async function () {
    this.timeout(60_000);
    const keys = await createKeys(other, 50);
    for (const k of keys) expect(await statusOf(listening, k.key)).to.equal(200);
    const beforeStart = await misses(listening);
    for (const k of keys) expect(await statusOf(listening, k.key)).to.equal(200);
    const before = (await misses(listening)) - beforeStart;

    const logs = await cutAndReconnect();
    const afterStart = await misses(listening);
    for (const k of keys) expect(await statusOf(listening, k.key)).to.equal(200);
    const after = (await misses(listening)) - afterStart;

    console.log(`      (database lookups for the ${keys.length} cached keys: ${before} before the reconnect, ${after} after it)`);
    expect(after, 'lookups after the reconnect').to.be.at.most(before);
    expect(logs.some((l) => l.includes('caught up on'))).to.equal(true);
    expect(logs.some((l) => l.includes('dropped cached keys'))).to.equal(false);
  });

  it('when a change numbered before one already heard commits while the channel is cut, then it still reaches the instance on reconnect', async function () {
    this.timeout(60_000);
    const [early, late] = await createKeys(other, 2);
    for (const k of [early!, late!]) expect(await statusOf(listening, k.key)).to.equal(200);
    // The early change takes its number first and commits last, after the channel is cut.
    const tx = new pg.Client({ connectionString: database.url });
    await tx.connect();
    try {
      await tx.query('BEGIN');
      await tx.query('UPDATE apikeys SET revoked_at = now() WHERE id = $1', [early!.id]);
      await signal(tx, { type: 'key', id: early!.id });
      // Heard while the channel is up: the last change the instance heard is now the later number.
      const from = listening.logs.length;
      expect((await late!.owner.delete(`/api/api-keys/${late!.id}`)).status).to.equal(204);
      await listening.waitForLog(/"msg":"signal heard"/, { from, timeoutMs: 5000 });
      expect(await statusOf(listening, late!.key)).to.equal(401);
      expect(await statusOf(listening, early!.key)).to.equal(200);

      const logs = await cutAndReconnect(async () => void (await tx.query('COMMIT')));
      expect(await statusOf(listening, early!.key)).to.equal(401);
      expect(logs.some((l) => l.includes('dropped cached keys'))).to.equal(false);
    } finally {
      await tx.end();
    }
  });

  it('when a policy is applied while the channel is cut, then the instance loads it on reconnect', async function () {
    this.timeout(60_000);
    const readyVersion = async () => ((await (await fetch(`${listening.url}/readyz`)).json()) as { policyVersion: number }).policyVersion;
    const texts = await readPolicyFiles(listening.config.policy);
    let version = -1;
    const logs = await cutAndReconnect(async () => {
      const applied = await applyPolicy(other.pool, { ...texts, policy: `${texts.policy}\n# applied while the channel was cut\n` }, { by: 'test', message: 'cut' });
      if (applied.status !== 'applied') throw new Error(`not applied: ${applied.status}`);
      version = applied.version;
    });
    await until('the applied version is in force', async () => (await readyVersion()) === version, 5000, 100);
    expect(logs.some((l) => l.includes('dropped cached keys'))).to.equal(false);
  });

  it('when the changes missed were pruned, then the instance says so and empties its caches instead', async function () {
    this.timeout(60_000);
    const [pruned, kept] = await createKeys(other, 2);
    for (const k of [pruned!, kept!]) expect(await statusOf(listening, k.key)).to.equal(200);
    const logs = await cutAndReconnect(async () => {
      expect((await pruned!.owner.delete(`/api/api-keys/${pruned!.id}`)).status).to.equal(204);
      expect((await kept!.owner.delete(`/api/api-keys/${kept!.id}`)).status).to.equal(204);
      // Everything but the newest change is made older than the record keeps, then the hourly sweep runs.
      await other.pool.query("UPDATE changes SET recorded_at = recorded_at - interval '2 days' WHERE id < (SELECT max(id) FROM changes)");
      await other.runPeriodic();
      const { rows } = await other.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM changes');
      expect(rows[0]!.n).to.equal(1);
    });
    const line = logs.find((l) => l.includes('signal channel reconnected'))!;
    expect(line).to.include('were pruned').and.include('dropped cached keys');
    expect(await statusOf(listening, pruned!.key)).to.equal(401);
    expect(await statusOf(listening, kept!.key)).to.equal(401);
  });
});
