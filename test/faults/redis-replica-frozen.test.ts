import { expect } from 'chai';
import { Redis } from 'ioredis';
import { utcDayStart } from '../../src/store/quota/day.ts';
import { REPLICA_GRACE_MS } from '../../src/store/quota/replica-wait.ts';
import { commandExists, startReplicatedRedis, type ReplicatedRedis } from '../support/engines.ts';
import { startEcho, type Echo } from '../support/echo.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { signUp } from '../support/http.ts';
import { drive, holdDown, summary, type Request } from './support.ts';

// redis.waitReplicas 1 and the only replica frozen (SIGSTOP: still connected, never acknowledging)
// under traffic. A count the replica did not acknowledge is refused, but only for
// a bounded moment: then the counters count on the master alone, told once, and every request is
// served again without waiting for the replica; when it thaws and acknowledges, that is told once
// and writes wait for it again.

const WORKERS = 16;
const FROZEN_MS = 4_000;

async function pidOf(port: number): Promise<number> {
  const r = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 0 });
  try {
    return Number(/process_id:(\d+)/.exec(await r.info('server'))![1]);
  } finally {
    r.disconnect();
  }
}

describe('faults: the only Redis replica frozen with redis.waitReplicas 1', function () {
  this.timeout(60_000);
  let redis: ReplicatedRedis;
  let echo: Echo;
  let gw: TestGateway;
  let replicaPid = 0;
  before(async function () {
    if (!commandExists('redis-server')) this.skip();
    redis = await startReplicatedRedis();
    replicaPid = await pidOf(redis.replicaPort);
    echo = await startEcho();
    gw = await startTestGateway({
      counters: 'redis', redisUrl: redis.url, quotaLease: { floor: Number.MAX_SAFE_INTEGER },
      config: { upstream: { url: echo.url }, defaultApiRateLimit: 1_000_000, redis: { waitReplicas: 1, waitTimeoutMs: 50 } },
    });
  });
  after(async () => {
    if (replicaPid) process.kill(replicaPid, 'SIGCONT');
    await gw?.stop();
    await echo?.close();
    await redis?.stop();
  });

  it('refuses unacknowledged counts for a bounded moment, then counts on the master alone, told once each way', async () => {
    const { client } = await signUp(gw.url);
    const made = (await client.post('/api/api-keys', { name: 'k' })).body as { id: string; key: string };
    const requests: Request[] = [{ kind: 'key', send: async (signal) => (await fetch(`${gw.url}/api/projects`, { headers: { 'x-api-key': made.key }, signal }).then(async (r) => (await r.text(), r))).status }];
    const from = gw.logs.length;
    const d = drive(requests, WORKERS);
    await d.untilServed('key', 50, 0);
    const frozenAt = d.now();
    await holdDown(FROZEN_MS, { hold: () => process.kill(replicaPid, 'SIGSTOP'), release: () => process.kill(replicaPid, 'SIGCONT') });
    const thawedAt = d.now();
    await gw.waitForLog(/replicas acknowledge counter writes again/, { from, timeoutMs: 10_000 });
    await d.untilServed('key', 50, d.now());
    await d.stop();

    const wrong = d.answers.filter((a) => a.status !== 200 && a.status !== 503);
    expect(wrong, summary(d.answers)).to.deep.equal([]);
    // Past the grace (and the writes already waiting when it ended), nothing is refused.
    const late = d.answers.filter((a) => a.at >= frozenAt + REPLICA_GRACE_MS + 1_000 && a.status === 503);
    expect(late.length, `503s after the grace (${summary(d.answers.filter((a) => a.at >= frozenAt))})`).to.equal(0);
    const lines = gw.logs.slice(from).map((l) => JSON.parse(l) as { msg: string });
    expect(lines.filter((l) => /counting on the master alone/.test(l.msg)), 'told alone').to.have.length(1);
    expect(lines.filter((l) => /acknowledge counter writes again/.test(l.msg)), 'told replicated').to.have.length(1);
    // A refused count stays counted: the counter holds the requests served and at most the refused ones.
    const day = utcDayStart(new Date()).getTime() / 1000;
    const master = new Redis(redis.url, { maxRetriesPerRequest: 0 });
    const counted = Number(await master.get(`keygate:quota:${made.id}:${day}`));
    master.disconnect();
    const served = d.answers.filter((a) => a.status === 200).length;
    expect(counted, 'counted vs served').to.be.within(served, served + d.answers.filter((a) => a.status === 503).length);
    const during = d.answers.filter((a) => a.at >= frozenAt && a.at < thawedAt);
    console.log(`      frozen ${FROZEN_MS} ms, ${WORKERS} callers: ${summary(during)}; slowest while frozen ${Math.max(...during.map((a) => a.ms))} ms`);
  });
});
