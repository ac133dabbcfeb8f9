import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { Client, signUp } from '../support/http.ts';
import { startEcho, type Echo } from '../support/echo.ts';
import { until } from '../support/until.ts';
import { FaultRedis } from './support.ts';

// An outage is told once: a line when it begins, with the store and its cause, and a line when it
// ends, with how long it lasted; the refused requests in between add no line of their own above
// debug.

interface Line { level: number; msg: string; store?: string; cause?: string; lastedMs?: number; refused?: number; status?: number }

// With redis.waitReplicas above 0 each counter write is a pipeline (the script, then WAIT) rather
// than one of the client's commands; its outage is told the same way. A lone Redis has no replica:
// WAIT gives up after waitTimeoutMs and the write counts, as a write that timed out waiting does.
const shapes = [
  { label: 'each write alone', redis: undefined },
  { label: 'each write followed by WAIT (redis.waitReplicas 1)', redis: { waitReplicas: 1, waitTimeoutMs: 10 } },
];

for (const shape of shapes) describe(`faults: an outage of the counters' Redis is logged once, ${shape.label}`, function () {
  this.timeout(60_000);
  let redis: FaultRedis;
  let echo: Echo;
  let gw: TestGateway;
  before(async () => {
    redis = await FaultRedis.start();
    echo = await startEcho();
    gw = await startTestGateway({ counters: 'redis', redisUrl: redis.url, quotaLease: { floor: Number.MAX_SAFE_INTEGER }, config: { upstream: { url: echo.url }, ...(shape.redis ? { redis: shape.redis } : {}) } });
  });
  after(async () => {
    await gw?.stop();
    await echo?.close();
    await redis?.kill();
  });

  it('one line with the cause when it begins, one when it ends, none per refused request', async () => {
    const { client } = await signUp(gw.url);
    const key = new Client(gw.url).withKey((await client.post('/api/api-keys', { name: 'k' })).body.key as string);
    expect((await key.get('/api/projects')).status).to.equal(200);
    expect(gw.logs.filter((l) => l.includes('unavailable')), 'no outage at start').to.deep.equal([]);
    const from = gw.logs.length;

    await redis.kill();
    const refused: number[] = [];
    for (let i = 0; i < 15; i++) refused.push((await key.get('/api/projects')).status);
    expect(refused.filter((s) => s === 503)).to.have.length(15);

    await redis.start();
    // The end is declared at the first answer once refusals have stopped for a moment: keep asking.
    await until('the end of the outage logged', async () => {
      await key.get('/api/projects');
      return gw.logs.slice(from).some((l) => l.includes('available again'));
    }, 10_000, 250);

    const lines = gw.logs.slice(from).map((l) => JSON.parse(l) as Line);
    const began = lines.filter((l) => l.msg.includes('unavailable'));
    const ended = lines.filter((l) => l.msg.includes('available again'));
    expect(began, 'lines saying the outage began').to.have.length(1);
    expect(began[0]).to.include({ store: 'counter store (Redis)' });
    expect(began[0]!.cause, 'the cause of the 503s').to.be.a('string').and.not.equal('');
    expect(ended, 'lines saying it ended').to.have.length(1);
    expect(ended[0]!.refused, "calls the store refused (the counters fail fast after the first)").to.be.at.least(1);
    const loud = lines.filter((l) => l.level >= 40 && !l.msg.includes('available'));
    expect(loud.map((l) => l.msg), 'other warnings or errors during the outage').to.deep.equal([]);
  });
});
