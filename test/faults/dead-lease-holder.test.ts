import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startEcho, type Echo } from '../support/echo.ts';
import { startTestGateway, type TestClock, type TestGateway } from '../support/gateway.ts';
import { REDIS_URL } from '../support/redis.ts';
import { startServe, type ServeChild } from '../support/serve-child.ts';
import { signUp } from '../support/http.ts';
import { tempDir } from '../support/tmp.ts';
import { until } from '../support/until.ts';

// A dead instance strands nothing: an instance holding leased blocks of a key's day
// is killed with SIGKILL, so it hands nothing back. What it had not claimed of its
// block returns to the key when the block's record expires, and another instance serves the rest.

const LIMIT = 1_500;
/**
 * The spender's default part of a block taken at a time. The next part is claimed when half of
 * one is left, so the holder's death loses at most one and a half parts.
 */
const CLAIM_SIZE = 25;

// Real time: the block records' expiry is judged against the callers' clocks.
const realClock = (): TestClock => ({ now: () => new Date(), set() {}, advance() {} });

for (const counters of ['redis', 'postgres'] as const) describe(`a dead instance strands no leased quota (${counters} counters)`, function () {
  this.timeout(120_000);
  let echo: Echo;
  let b: TestGateway;
  let a: ServeChild | null = null;

  before(async () => {
    echo = await startEcho();
  });
  after(async () => {
    await a?.stop('SIGKILL');
    await b?.stop();
    await echo?.close();
  });

  it('kill -9 of a holder: another instance serves the rest of the budget, never more than the limit', async () => {
    const config = {
      upstream: { url: echo.url }, defaultApiRateLimit: LIMIT,
      apiKeys: { enabled: true, variant: 'A', prefix: 'key_', maxKeysPerUser: 10, maxCreatesPerDay: 100 },
    };
    b = await startTestGateway({ counters, clock: realClock(), config });
    const { client } = await signUp(b.url);
    const key = (await client.post('/api/api-keys', { name: 'fleet' })).body.key as string;

    const cwd = tempDir('kg-lease-holder-');
    writeFileSync(join(cwd, 'keygate.yaml'), JSON.stringify(config));
    const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: b.database.url, REDIS_URL, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' };
    delete env.KEYGATE_CONFIG;
    if (counters === 'postgres') delete env.REDIS_URL;
    a = startServe({ cwd, env });
    const aUrl = await a.url;

    const hit = async (url: string) => (await fetch(`${url}/api/projects`, { headers: { 'x-api-key': key } })).status;
    // A's first request is counted one by one, the next ones spend from a leased block of 200.
    let servedByA = 0;
    for (let i = 0; i < 100; i++) if ((await hit(aUrl)) === 200) servedByA++;
    expect(servedByA).to.equal(100);

    await a.stop('SIGKILL');
    const killedAt = Date.now();

    // B serves until it is refused after the 5 s within which A's block must have come back.
    let servedByB = 0;
    const unexpected: number[] = [];
    // Each worker spends what B may serve, and after each refusal asks again (the pause between two
    // asks spares the machine) until it is refused past those 5 s.
    const worker = () => until('B refused more than 5.5 s after the kill', async () => {
      let status: number;
      while ((status = await hit(b.url)) === 200) servedByB++;
      if (status !== 429) unexpected.push(status);
      return status !== 429 || Date.now() - killedAt > 5_500;
    }, 60_000, 100);
    await Promise.all([worker(), worker(), worker(), worker()]);
    expect(unexpected, 'answers other than 200 and 429').to.deep.equal([]);
    const total = servedByA + servedByB;
    expect(total, 'served across the fleet').to.be.at.most(LIMIT);
    expect(total, 'served across the fleet').to.be.at.least(LIMIT - 1.5 * CLAIM_SIZE);
  });
});
