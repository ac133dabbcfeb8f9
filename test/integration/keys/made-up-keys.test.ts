import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp, type Reply } from '../../support/http.ts';
import { generateKey, keyStart } from '../../../src/services/keys/format.ts';
import { sha256 } from '../../../src/services/secrets.ts';

// Anyone can compute the checksum, so made-up keys pass the format check. They must neither cost a
// database lookup each nor push real keys out of the verification cache.

async function metric(gw: TestGateway, name: string, label: string): Promise<number> {
  const text = (await new Client(gw.url).get('/metrics')).text;
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${label}}`));
  return line ? Number(line.split(' ').pop()) : 0;
}
const lookups = (gw: TestGateway, result: string) => metric(gw, 'keygate_key_lookups_total', `result="${result}"`);

async function flood(base: string, keys: string[], width = 50): Promise<Reply[]> {
  const out: Reply[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < keys.length) {
      const i = next++;
      out[i] = await new Client(base).withKey(keys[i]!).get('/api/auth/get-session');
    }
  }));
  return out;
}

describe('a flood of made-up keys with valid checksums', () => {
  let gw: TestGateway;
  let other: TestGateway;
  before(async () => {
    // Small caches, so that a shared one would be flushed by the flood.
    gw = await startTestGateway({ config: { keyCache: { maxBytes: 1024 * 1024, unknownMaxBytes: 65_536 } } });
    other = await startTestGateway({ database: gw.database });
  });
  after(async () => {
    await other?.stop();
    await gw?.stop();
  });

  it('costs about 100 database lookups a second at most, answers each 401, and leaves the cached real key cached', async function () {
    this.timeout(120_000);
    const { client } = await signUp(gw.url);
    const real = (await client.post('/api/api-keys', { name: 'real' })).body.key as string;
    expect((await new Client(gw.url).withKey(real).get('/api/auth/get-session')).status).to.equal(200);
    const missesBefore = await lookups(gw, 'miss');
    const hitsBefore = await lookups(gw, 'hit');

    const started = Date.now();
    const answers = await flood(gw.url, Array.from({ length: 3000 }, () => generateKey('key_')));
    const seconds = (Date.now() - started) / 1000;
    expect(answers.every((r) => r.status === 401 && r.body.code === 'INVALID_API_KEY')).to.equal(true);
    const missed = (await lookups(gw, 'miss')) - missesBefore;
    expect(missed, `${missed} lookups in ${seconds.toFixed(1)} s`).to.be.at.most(100 + Math.ceil(100 * seconds));
    expect(await lookups(gw, 'refused-unknown')).to.be.at.least(3000 - missed);

    expect((await new Client(gw.url).withKey(real).get('/api/auth/get-session')).status).to.equal(200);
    expect(await lookups(gw, 'hit'), 'the real key was still cached').to.equal(hitsBefore + 1);
    expect(await lookups(gw, 'miss')).to.equal(missesBefore + missed);
  });

  it('a real key created on another instance while the flood goes on is served at once', async function () {
    this.timeout(120_000);
    const { client } = await signUp(other.url);
    let stop = false;
    const flooding = (async () => {
      while (!stop) await flood(gw.url, Array.from({ length: 200 }, () => generateKey('key_')));
    })();
    try {
      // Let the flood spend the lookup budget first.
      await flood(gw.url, Array.from({ length: 300 }, () => generateKey('key_')));
      const created = (await client.post('/api/api-keys', { name: 'new' })).body.key as string;
      const res = await new Client(gw.url).withKey(created).get('/api/auth/get-session');
      expect(res.status).to.equal(200);
    } finally {
      stop = true;
      await flooding;
    }
  });
});

describe('the verification cache is bounded in bytes (keyCache.maxBytes)', () => {
  it('1,500 distinct real keys verified leave at most 1 MiB held, and every one is still served', async function () {
    this.timeout(120_000);
    const gw = await startTestGateway({ config: { keyCache: { maxBytes: 1024 * 1024 } } });
    try {
      const { user } = await signUp(gw.url);
      const keys = Array.from({ length: 1500 }, () => generateKey('key_'));
      await gw.pool.query(
        `INSERT INTO apikeys (user_id, name, key_hash, start, prefix, request_quota)
         SELECT $1, 'k', h, s, 'key_', 10 FROM unnest($2::bytea[], $3::text[]) AS t(h, s)`,
        [user.id, keys.map((k) => sha256(k)), keys.map(keyStart)]);
      const answers = await flood(gw.url, keys, 20);
      expect(answers.filter((r) => r.status !== 200).map((r) => r.status)).to.deep.equal([]);
      const held = await metric(gw, 'keygate_key_cache_bytes', 'cache="known"');
      expect(held).to.be.within(512 * 1024, 1024 * 1024);
      // Evicted keys are looked up again, not refused.
      expect((await new Client(gw.url).withKey(keys[0]!).get('/api/auth/get-session')).status).to.equal(200);
    } finally {
      await gw.stop();
    }
  });
});
