import { expect } from 'chai';
import { Redis } from 'ioredis';
import { utcDayStart } from '../../src/store/quota/day.ts';
import { REPLICA_GRACE_MS } from '../../src/store/quota/replica-wait.ts';
import { commandExists, startSentinelSet, until, type SentinelSet } from '../support/engines.ts';
import { startEcho, type Echo } from '../support/echo.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { signUp } from '../support/http.ts';
import { ANSWER_BOUND_MS, drive, holdDown, summary, type Answer, type Request } from './support.ts';

// A planned Sentinel failover (SENTINEL FAILOVER) under key traffic, with redis.waitReplicas 1 and
// a daily limit: a master, its replica and a sentinel of the test's own. Across the failover:
// no key is served past its limit; the requests answered 503 because no replica acknowledged their
// count do not use up the key's day (each key still gets all but a few of its limit); and the 503s
// last a bounded moment, each answered within a couple of WAIT timeouts, not seconds of refusals.

const LIMIT = 400;
const KEYS = 4;
const WORKERS = 8;
const PAUSE_MS = 30;
const WAIT_MS = 100;
/**
 * What a key may lose of its day to the failover: a count the replica had but had not acknowledged
 * when it was promoted stays counted there (the master that refused it cannot tell), and so does a
 * count whose answer the failover cut off; each is one batch of writes at most.
 */
const LOST_BOUND = 10;
/**
 * The 503s of the failover fall in one stretch from SENTINEL FAILOVER: the failover itself (the
 * sentinel sees the promotion within a second), the grace before counting alone on the new master
 * (which has no replica until the old one is re-attached), and the writes already waiting then.
 */
const REFUSALS_SPAN_MS = 1_500 + REPLICA_GRACE_MS + 1_000;

const served = (answers: Answer[], kind: string) => answers.filter((a) => a.kind === kind && a.status === 200).length;

describe('faults: SENTINEL FAILOVER under key traffic with redis.waitReplicas 1', function () {
  this.timeout(120_000);
  let set: SentinelSet;
  let echo: Echo;
  let gw: TestGateway;
  before(async function () {
    if (!commandExists('redis-server')) this.skip();
    set = await startSentinelSet();
    echo = await startEcho();
    gw = await startTestGateway({
      env: { REDIS_SENTINELS: set.sentinels, REDIS_SENTINEL_NAME: set.name },
      config: { upstream: { url: echo.url }, defaultApiRateLimit: LIMIT, redis: { waitReplicas: 1, waitTimeoutMs: WAIT_MS } },
    });
  });
  after(async () => {
    await gw?.stop();
    await echo?.close();
    await set?.stop();
  });

  /** `keys` fresh keys, and traffic over them until a third of their quota is served. */
  async function traffic(keys: number) {
    const { client } = await signUp(gw.url);
    const made: { id: string; key: string }[] = [];
    for (let i = 0; i < keys; i++) made.push((await client.post('/api/api-keys', { name: `k${i}` })).body as { id: string; key: string });
    const requests: Request[] = made.map((m, i) => ({
      kind: `k${i}`,
      send: async (signal) => (await fetch(`${gw.url}/api/projects`, { headers: { 'x-api-key': m.key }, signal }).then(async (r) => (await r.text(), r))).status,
    }));
    const d = drive(requests, WORKERS, PAUSE_MS);
    await until('a third of the quota served', async () => d.answers.filter((a) => a.status === 200).length >= (keys * LIMIT) / 3, 60_000, 20);
    const exhausted = () => until('every key at its limit', async () =>
      requests.every((r) => d.answers.filter((a) => a.kind === r.kind && a.status === 429).length >= 5), 60_000, 50);
    return { made, requests, d, exhausted };
  }

  // First, without a failover: the replica stops acknowledging for less than the grace (SIGSTOP),
  // so every refusal happens on the master that stays, where a refused count that stayed counted
  // would be lost to its key for the day.
  it('a replica that stops acknowledging for a moment: the refused requests leave the day whole', async () => {
    // One key, so that every refusal is its own.
    const { requests, d, exhausted } = await traffic(1);
    const replica = new Redis({ host: '127.0.0.1', port: set.replicaPort, maxRetriesPerRequest: 0 });
    const pid = Number(/process_id:(\d+)/.exec(await replica.info('server'))![1]);
    replica.disconnect();
    const frozenAt = d.now();
    await holdDown(REPLICA_GRACE_MS * 0.8, { hold: () => process.kill(pid, 'SIGSTOP'), release: () => process.kill(pid, 'SIGCONT') });
    await exhausted();
    await d.stop();
    const all = summary(d.answers);
    const counts = requests.map((r) => served(d.answers, r.kind));
    console.log(`      served per key ${counts.join(', ')} of ${LIMIT}; from the freeze on ${summary(d.answers.filter((a) => a.at >= frozenAt))}`);
    expect(d.answers.filter((a) => ![200, 429, 503].includes(a.status)), all).to.deep.equal([]);
    // Nothing moved: only a refusal whose answer was cut off could stay counted.
    for (const n of counts) expect(n, `served (${all})`).to.be.within(LIMIT - 2, LIMIT);
  });

  it('SENTINEL FAILOVER: serves no key past its limit, lets no refused request use up a day, refuses only for a moment', async () => {
    const from = gw.logs.length;
    const { made, requests, d, exhausted } = await traffic(KEYS);
    const sentinel = new Redis({ host: '127.0.0.1', port: Number(set.sentinels.split(':')[1]), maxRetriesPerRequest: 0 });
    const failoverAt = d.now();
    try {
      await sentinel.call('SENTINEL', 'FAILOVER', set.name);
    } finally {
      sentinel.disconnect();
    }
    await until('the replica promoted', async () => (await set.currentMaster()) === set.replicaPort, 20_000);
    const switchedAt = d.now();
    // Every key used up its day: each has been refused with 429 a few times.
    await exhausted();
    await d.stop();
    const all = summary(d.answers);
    expect(d.answers.filter((a) => ![200, 429, 503].includes(a.status)), all).to.deep.equal([]);
    const counts = requests.map((r) => served(d.answers, r.kind));
    const day = utcDayStart(new Date()).getTime() / 1000;
    const master = new Redis({ host: '127.0.0.1', port: set.replicaPort, maxRetriesPerRequest: 0 });
    const counted = await Promise.all(made.map(async (m) => Number(await master.get(`keygate:quota:${m.id}:${day}`))));
    master.disconnect();
    const after = d.answers.filter((a) => a.at >= failoverAt);
    const refused = after.filter((a) => a.status === 503);
    const span = refused.length ? refused.at(-1)!.at - failoverAt : 0;
    const before = d.answers.length - after.length;
    const lines = gw.logs.slice(from).map((l) => JSON.parse(l) as { msg: string }).filter((l) => /replica|master alone/i.test(l.msg));
    console.log(`      served per key ${counts.join(', ')} of ${LIMIT}; counted on the new master ${counted.join(', ')} (429s too); `
      + `sentinel named the new master ${switchedAt - failoverAt} ms after SENTINEL FAILOVER; `
      + `after it ${refused.length} answered 503 within ${span} ms of it (slowest ${Math.max(0, ...refused.map((a) => a.ms))} ms), `
      + `slowest answer ${Math.max(...after.map((a) => a.ms))} ms; before it ${summary(d.answers.slice(0, before))}; `
      + `told: ${lines.map((l) => l.msg.slice(0, 40)).join(' | ') || 'nothing'}`);

    // (1) Never more than the limit, across the failover.
    for (const n of counts) expect(n, `served (${all})`).to.be.at.most(LIMIT);
    // (2) The 503s did not use up the day: every key was served all but a few of its limit.
    for (const n of counts) expect(n, `served (${all})`).to.be.at.least(LIMIT - LOST_BOUND);
    // (3) The failover's refusals are one short stretch, and no answer waited for long.
    expect(span, `last 503 after SENTINEL FAILOVER (${summary(after)})`).to.be.at.most(REFUSALS_SPAN_MS);
    for (const a of refused) expect(a.ms, 'a 503 within a couple of WAIT timeouts').to.be.at.most(4 * WAIT_MS + 500);
    for (const a of after) expect(a.ms, 'an answer across the failover').to.be.at.most(ANSWER_BOUND_MS);
  });
});
