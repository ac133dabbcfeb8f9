import { spawn } from 'node:child_process';
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { applyPolicy, readPolicyFiles } from '../../../src/services/policy/index.ts';
import { parsePolicy, ruleToCsvRow } from '../../../src/policy/rules.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { startTestGateway, useGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { roomyPlans, startEcho, type Echo } from './support.ts';

// The policy lives in PostgreSQL; `keygate policy apply` writes the files into it and
// every running instance reloads within a second. The first start seeds an empty store.

const root = resolve(import.meta.dirname, '../../..');
const MODEL = resolve(root, 'policies/model.conf');
const VARIANT_A = resolve(root, 'policies/variant-a.csv');
const applyPolicyFiles = async (pool: TestGateway['pool'], model: string, file: string) => applyPolicy(pool, await readPolicyFiles({ model, file }), { by: 'test', message: '' });
const DENY_PROJECTS = 'p, key, *, .*, /api/projects/**, deny, key.projects-closed';

/** The stored rows, each as its JSON text, sorted: what the store holds, duplicates included. */
async function storedRows(gw: { pool: TestGateway['pool'] }): Promise<string[]> {
  const { rows } = await gw.pool.query<{ ptype: string; rule: string[] }>('SELECT ptype, rule FROM casbin');
  return rows.map((r) => JSON.stringify([r.ptype, ...r.rule])).sort();
}

async function fileRows(path: string): Promise<string[]> {
  const parsed = parsePolicy(await readFile(path, 'utf8'));
  expect(parsed.problems).to.deep.equal([]);
  return parsed.rules.map((r) => JSON.stringify(ruleToCsvRow(r))).sort();
}

/** Waits for `gw` to log a reload after its line `from`; answers the milliseconds the wait took. */
async function msUntilReloaded(gw: TestGateway, from: number): Promise<number> {
  const start = performance.now();
  await gw.waitForLog(/"msg":"policy reloaded"/, { from, timeoutMs: 3000 });
  return performance.now() - start;
}

function runCli(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, [resolve(root, 'bin/keygate.js'), ...args], { cwd: root, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c));
    child.stderr.on('data', (c: Buffer) => (stderr += c));
    child.on('error', fail);
    child.on('close', (code) => ok({ code, stdout, stderr }));
  });
}

/**
 * A TCP proxy in front of PostgreSQL that holds back the message carrying `LISTEN keygate_events`
 * until released: the moment between an instance reading the stored policy and listening for
 * changes, made wide enough to apply a policy in it.
 */
async function listenGate(target: URL): Promise<{ url: (db: TestDatabase) => string; listenerWaiting: Promise<void>; release(): void; close(): Promise<void> }> {
  let signalWaiting!: () => void;
  const listenerWaiting = new Promise<void>((ok) => (signalWaiting = ok));
  let released = false;
  const held: (() => void)[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const pg = connect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(pg);
    let holding = false;
    client.on('data', (chunk: Buffer) => {
      if (!released && (holding || chunk.includes('LISTEN keygate_events'))) {
        holding = true;
        held.push(() => pg.write(chunk));
        signalWaiting();
        return;
      }
      pg.write(chunk);
    });
    pg.on('data', (chunk: Buffer) => client.write(chunk));
    client.on('close', () => pg.destroy());
    pg.on('close', () => client.destroy());
    client.on('error', () => pg.destroy());
    pg.on('error', () => client.destroy());
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
  const { port } = server.address() as AddressInfo;
  return {
    url: (db) => {
      const u = new URL(db.url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    listenerWaiting,
    release() {
      released = true;
      for (const send of held.splice(0)) send();
    },
    close: () =>
      new Promise<void>((ok) => {
        for (const s of sockets) s.destroy();
        server.close(() => ok());
      }),
  };
}

describe('policy store: seeding and reloads across instances', () => {
  let echo: Echo;
  let dir: string;
  before(async () => {
    echo = await startEcho();
    dir = await mkdtemp(join(tmpdir(), 'keygate-policy-'));
  });
  after(async () => {
    await echo?.close();
    await rm(dir, { recursive: true, force: true });
  });

  describe('when the policy is applied on one instance, then a second instance on the same database decides by it within a second', () => {
    let gw1: TestGateway;
    let gw2: TestGateway;
    let key: string;
    let closedPolicy: string;
    before(async () => {
      gw1 = await startTestGateway({ config: { upstream: { url: echo.url }, ...roomyPlans } });
      gw2 = await startTestGateway({ database: gw1.database, config: { upstream: { url: echo.url }, ...roomyPlans } });
      const { client } = await signUp(gw1.url);
      key = (await client.post('/api/api-keys', { name: 'reload' })).body.key;
      closedPolicy = join(dir, 'closed.csv');
      await writeFile(closedPolicy, `${await readFile(VARIANT_A, 'utf8')}\n${DENY_PROJECTS}\n`);
    });
    after(async () => {
      await gw2?.stop();
      await gw1?.stop();
    });

    const statusOn = async (gw: TestGateway) => (await new Client(gw.url).withKey(key).get('/api/projects')).status;

    it('before: both instances forward a key\'s GET /api/projects', async () => {
      expect(await statusOn(gw1)).to.equal(200);
      expect(await statusOn(gw2)).to.equal(200);
    });

    it('applyPolicyFiles on instance 1 closes /api/projects to keys on instance 2 in under 1000 ms', async () => {
      const from = gw2.logs.length;
      await applyPolicyFiles(gw1.pool, MODEL, closedPolicy);
      const ms = await msUntilReloaded(gw2, from);
      expect(ms, `instance 2 took ${Math.round(ms)} ms`).to.be.below(1000);
      expect(await statusOn(gw2)).to.equal(403);
      const refused = await new Client(gw2.url).withKey(key).get('/api/projects');
      expect(refused.body).to.include({ status: 403, code: 'FORBIDDEN' });
      expect(await storedRows(gw2)).to.deep.equal(await fileRows(closedPolicy));
    });

    it('applying the shipped file again reopens it on instance 2 in under 1000 ms', async () => {
      const from = gw2.logs.length;
      await applyPolicyFiles(gw1.pool, MODEL, VARIANT_A);
      const ms = await msUntilReloaded(gw2, from);
      expect(ms, `instance 2 took ${Math.round(ms)} ms`).to.be.below(1000);
      expect(await statusOn(gw2)).to.equal(200);
    });

    it('`keygate policy apply` (the CLI, another process) closes it on both instances within a second of finishing', async function () {
      this.timeout(60_000);
      const yaml = join(dir, 'keygate.yaml');
      await writeFile(yaml, 'policy:\n  file: ./closed.csv\n');
      const from = [gw1.logs.length, gw2.logs.length] as const;
      const run = await runCli(['policy', 'apply'], { KEYGATE_CONFIG: yaml, DATABASE_URL: gw1.database.url });
      expect(run.code, run.stderr).to.equal(0);
      expect(run.stdout).to.match(/applied \S+ as version \d+ \(\d+ lines\)/);
      const ms = Math.max(await msUntilReloaded(gw1, from[0]), await msUntilReloaded(gw2, from[1]));
      expect(ms).to.be.below(1000);
      expect(await statusOn(gw1)).to.equal(403);
      expect(await statusOn(gw2)).to.equal(403);
    });

    it('a policy applied while instance 2 starts, after it read the store but before it listens, still reaches it within a second', async function () {
      this.timeout(20_000);
      const from = gw1.logs.length;
      await applyPolicyFiles(gw1.pool, MODEL, VARIANT_A);
      await msUntilReloaded(gw1, from);
      expect(await statusOn(gw1)).to.equal(200);
      const gate = await listenGate(new URL(gw1.database.url));
      const starting = startTestGateway({ database: { ...gw1.database, url: gate.url(gw1.database) }, config: { upstream: { url: echo.url }, ...roomyPlans } });
      let late: TestGateway | undefined;
      try {
        await gate.listenerWaiting;
        await applyPolicyFiles(gw1.pool, MODEL, closedPolicy);
        gate.release();
        late = await starting;
        const lateGw = late;
        expect(await statusOn(gw1)).to.equal(403);
        // Listening began before the store was read, so the instance has the applied policy once started.
        expect(await statusOn(lateGw), 'the instance that started during the apply still forwards what the stored policy refuses').to.equal(403);
      } finally {
        gate.release();
        await (late ?? (await starting.catch(() => undefined)))?.stop();
        await gate.close();
      }
    });

    it('a policy that does not load is refused by apply and the one in force stays', async () => {
      // Its own policy in force and its own user and key: nothing here comes from the tests before.
      const from = gw2.logs.length;
      // The test before may have left this very policy live: applying it again then stores nothing.
      if ((await applyPolicyFiles(gw1.pool, MODEL, closedPolicy)).status === 'applied') await msUntilReloaded(gw2, from);
      const { client } = await signUp(gw1.url);
      const own = (await client.post('/api/api-keys', { name: 'in-force' })).body.key as string;
      const ownStatus = async () => (await new Client(gw2.url).withKey(own).get('/api/projects')).status;
      expect(await ownStatus(), 'the closed policy is in force').to.equal(403);
      const broken = join(dir, 'broken.csv');
      await writeFile(broken, `${await readFile(VARIANT_A, 'utf8')}\np, key, *, GET, /api/projects, allow\n`);
      const before = await storedRows(gw1);
      let failed = false;
      await applyPolicyFiles(gw1.pool, MODEL, broken).catch(() => (failed = true));
      expect(failed, 'apply should refuse a malformed policy').to.equal(true);
      expect(await storedRows(gw1)).to.deep.equal(before);
      // Nothing was written, so no signal was sent: the policy in force is the one before.
      expect(await ownStatus()).to.equal(403);
    });
  });

  describe('when the very first instance starts on an empty store, then it seeds the store from the policy file', () => {
    let gw: TestGateway;
    useGateway({}, (g) => (gw = g));

    it('the store holds exactly the lines of the variant file, and the start says so', async () => {
      expect(await storedRows(gw)).to.deep.equal(await fileRows(VARIANT_A));
      expect(gw.logs.some((l) => l.includes('policy store was empty'))).to.equal(true);
    });

    it('a later instance on the same store does not seed again', async () => {
      const second = await startTestGateway({ database: gw.database });
      try {
        expect(await storedRows(gw)).to.deep.equal(await fileRows(VARIANT_A));
        expect(second.logs.some((l) => l.includes('policy store was empty'))).to.equal(false);
      } finally {
        await second.stop();
      }
    });

    it('an instance whose file differs from the store keeps the store and warns', async () => {
      const second = await startTestGateway({ database: gw.database, config: { apiKeys: { enabled: true, variant: 'B' } } });
      try {
        expect(await storedRows(gw)).to.deep.equal(await fileRows(VARIANT_A));
        expect(second.logs.some((l) => l.includes('differs from the policy file'))).to.equal(true);
      } finally {
        await second.stop();
      }
    });
  });

  describe('when two instances start at once on an empty database, then the store ends with exactly one copy of the policy', () => {
    for (let round = 1; round <= 3; round++) {
      it(`round ${round}`, async () => {
        const db: TestDatabase = await createTestDatabase();
        const started = await Promise.allSettled([startTestGateway({ database: db }), startTestGateway({ database: db })]);
        try {
          const failures = started.filter((s) => s.status === 'rejected').map((s) => String((s as PromiseRejectedResult).reason));
          expect(failures, 'both instances should start').to.deep.equal([]);
          const [a, b] = started.map((s) => (s as PromiseFulfilledResult<TestGateway>).value) as [TestGateway, TestGateway];
          expect(await storedRows(a)).to.deep.equal(await fileRows(VARIANT_A));
          const seeders = [a, b].filter((g) => g.logs.some((l) => l.includes('policy store was empty')));
          expect(seeders, 'exactly one instance seeds').to.have.length(1);
          for (const g of [a, b]) expect((await new Client(g.url).get('/api/projects')).status).to.equal(401);
        } finally {
          for (const s of started) if (s.status === 'fulfilled') await s.value.stop();
          await db.drop();
        }
      });
    }
  });
});
