// (e): one keygate process verifying 100,000 distinct stored keys, each once, and then a flood of
// made-up keys with valid checksums (anyone can compute the CRC). Measures the memory the first
// leaves behind, the database lookups the second costs, and whether the flood evicts a real key.
import autocannon from 'autocannon';
import pg from 'pg';
import { generateKey, keyStart } from '../../src/services/keys/format.ts';
import { sha256 } from '../../src/services/secrets.ts';
import { Client } from '../support/http.ts';

/**
 * Stores `count` keys of `userId` and returns their plaintexts (kept in the bench process only).
 * A quota of 1,000: each key is used once or twice, counted one by one (no block is leased).
 */
export async function storeKeys(databaseUrl: string, userId: string, count: number): Promise<string[]> {
  const keys = Array.from({ length: count }, () => generateKey('key_'));
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    for (let i = 0; i < keys.length; i += 10_000) {
      const part = keys.slice(i, i + 10_000);
      await client.query(
        `INSERT INTO apikeys (user_id, name, key_hash, start, prefix, request_quota)
         SELECT $1, 'bench ' || s, h, s, 'key_', 1000 FROM unnest($2::bytea[], $3::text[]) AS t(h, s)`,
        [userId, part.map((k) => sha256(k)), part.map(keyStart)]);
    }
  } finally {
    await client.end();
  }
  return keys;
}

export interface KeysRun { requests: number; seconds: number; statuses: Map<number, number> }

/** One request per key in `keys`, each with its own `x-api-key`, over `connections`. */
export function eachKeyOnce(url: string, keys: readonly string[], connections: number): Promise<KeysRun> {
  return new Promise((resolve, reject) => {
    let next = 0;
    const statuses = new Map<number, number>();
    const started = Date.now();
    const instance = autocannon({
      url, connections, amount: keys.length, timeout: 10,
      requests: [{ setupRequest: (req) => ({ ...req, headers: { ...req.headers, 'x-api-key': keys[next++ % keys.length]! } }) }],
    }, (err) => {
      if (err) return reject(err);
      resolve({ requests: [...statuses.values()].reduce((a, b) => a + b, 0), seconds: (Date.now() - started) / 1000, statuses });
    });
    instance.on('response', (_c: unknown, status: number) => statuses.set(status, (statuses.get(status) ?? 0) + 1));
  });
}

/** A counter of keygate's /metrics, summed over the label set that starts with `labels`. */
export async function metric(base: string, name: string, labels: string): Promise<number> {
  const text = (await new Client(base).get('/metrics')).text;
  return text.split('\n').filter((l) => l.startsWith(`${name}{${labels}`)).reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

export interface FloodResult {
  keys: number;
  seconds: number;
  refused: number;
  /** Database lookups the flood caused, and per second. */
  lookups: number;
  lookupsPerSecond: number;
  /** A real key verified before the flood was still answered from the cache after it. */
  realKeyStillCached: boolean;
}

export async function madeUpKeyFlood(base: string, realKey: string, count: number, connections: number): Promise<FloodResult> {
  const real = new Client(base).withKey(realKey);
  if ((await real.get('/api/auth/get-session')).status !== 200) throw new Error('flood: the real key was not served before the flood');
  const made = Array.from({ length: count }, () => generateKey('key_'));
  const lookupsBefore = await metric(base, 'keygate_key_lookups_total', 'result="miss"');
  const run = await eachKeyOnce(`${base}/api/auth/get-session`, made, connections);
  const lookups = (await metric(base, 'keygate_key_lookups_total', 'result="miss"')) - lookupsBefore;
  const hitsBefore = await metric(base, 'keygate_key_lookups_total', 'result="hit"');
  const after = await real.get('/api/auth/get-session');
  const hitsAfter = await metric(base, 'keygate_key_lookups_total', 'result="hit"');
  return {
    keys: count, seconds: run.seconds, refused: run.statuses.get(401) ?? 0,
    lookups, lookupsPerSecond: lookups / run.seconds,
    realKeyStillCached: after.status === 200 && hitsAfter === hitsBefore + 1,
  };
}
