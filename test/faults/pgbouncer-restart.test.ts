import { expect } from 'chai';
import { commandExists, startPgBouncer, type PgBouncer } from '../support/engines.ts';
import { startEcho, type Echo } from '../support/echo.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { Client, signUp } from '../support/http.ts';
import { requireRedis } from '../support/redis.ts';
import { until } from '../support/until.ts';
import { FaultPostgres } from './support.ts';

// PostgreSQL killed (-9) and started again behind a transaction-pooling PgBouncer, the signal
// channel on the direct URL. The channel reconnects as soon as PostgreSQL accepts, while PgBouncer
// still refuses logins for a while (server_login_retry): the catch-up must read the change record
// where the signal comes from, keep every cached key, and so serve them at once, not after
// PgBouncer takes logins again.

const KEYS = 10;

describe('faults: PostgreSQL restarted behind PgBouncer', function () {
  this.timeout(120_000);
  let pg: FaultPostgres;
  let bouncer: PgBouncer;
  let echo: Echo;
  let gw: TestGateway;
  before(async function () {
    await requireRedis(this);
    if (!FaultPostgres.available() || !commandExists('pgbouncer')) this.skip();
    pg = await FaultPostgres.start();
    bouncer = await startPgBouncer(pg.url);
    echo = await startEcho();
    gw = await startTestGateway({
      database: { url: bouncer.urlFor('postgres'), name: 'postgres', drop: async () => {} }, counters: 'redis',
      env: { DATABASE_DIRECT_URL: pg.url },
      config: { upstream: { url: echo.url } },
    });
  });
  after(async () => {
    await gw?.stop();
    await echo?.close();
    await bouncer?.stop();
    await pg?.stop();
  });

  it('catches up over the direct connection and keeps serving the cached keys', async () => {
    const { client } = await signUp(gw.url);
    const keys: Client[] = [];
    for (let i = 0; i < KEYS; i++) keys.push(new Client(gw.url).withKey((await client.post('/api/api-keys', { name: `k${i}` })).body.key as string));
    for (const k of keys) expect((await k.get('/api/projects')).status).to.equal(200);
    const from = gw.logs.length;
    await pg.kill();
    // Down until a signed-in request through PgBouncer is refused: PgBouncer has then failed a login
    // to the dead server, and so waits server_login_retry before it tries again once it is back.
    await until('a request through PgBouncer refused while PostgreSQL is down', async () =>
      (await client.get('/api/api-keys')).status === 503, 15_000, 100);
    await pg.start();
    await gw.waitForLog(/signal channel reconnected/, { from, timeoutMs: 15_000 });
    const line = gw.logs.slice(from).find((l) => /signal channel reconnected/.test(l))!;
    expect(JSON.parse(line).msg, 'the catch-up').to.match(/caught up on \d+ recorded changes/);
    const statuses = await Promise.all(keys.map(async (k) => (await k.get('/api/projects')).status));
    expect(statuses, 'cached keys right after the reconnect').to.deep.equal(Array(KEYS).fill(200));
  });
});
