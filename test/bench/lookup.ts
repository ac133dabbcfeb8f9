// Whether a million stored keys slow verification down: the lookup verification runs
// (findKeyByHash), timed against a database holding a thousand keys and one holding a million.
// The lookups alternate between the two, so a busy moment of the machine lands on both alike
// instead of on whichever was timed second.
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { findKeyByHash } from '../../src/store/apikeys.ts';
import type { Queryable } from '../../src/store/db.ts';
import { quantile } from './load.ts';

export interface LookupTimes { p50: number; p99: number }
export interface LookupAt { rows: number; hits: LookupTimes; misses: LookupTimes; plan: string }
export interface LookupBenchResult {
  small: LookupAt;
  large: LookupAt;
  /** Seconds to insert the large database's keys, then VACUUM and ANALYZE. */
  insertSeconds: number;
}

export interface LookupOptions { smallRows?: number; largeRows?: number; lookups?: number; log?: (line: string) => void }

const keyHash = (i: number) => createHash('sha256').update(`bench-${i}`).digest();
const missHash = () => createHash('sha256').update(randomBytes(16)).digest();

// key_hash is computed as the store does (SHA-256 of the whole key); `'bench-'||i` stands in for
// the key, which is all the unique index sees.
async function storeKeys(pool: pg.Pool, rows: number): Promise<void> {
  const { rows: users } = await pool.query<{ id: string }>(
    `INSERT INTO users (email, name, password_hash) VALUES ('bench-lookup@example.test', 'Bench lookups', 'not a password hash') RETURNING id`);
  await pool.query(
    `INSERT INTO apikeys (user_id, name, key_hash, start, prefix, permissions, request_quota)
     SELECT $1, 'bench ' || i, sha256(('bench-' || i)::bytea), 'key_' || substr(md5(i::text), 1, 8), 'key_', '{}', 100000000
       FROM generate_series(1, $2::int) AS i`,
    [users[0]!.id, rows],
  );
  // Without it the first read of each fresh row writes its hint bits, a cost of the bulk load,
  // not of the table's size.
  await pool.query('VACUUM (ANALYZE) apikeys');
  await pool.query('VACUUM (ANALYZE) users');
  // The load's WAL is flushed now rather than by a checkpoint in the middle of the timings.
  await pool.query('CHECKPOINT').catch(() => {});
}

/** EXPLAIN of the very statement findKeyByHash sends, caught on its way to the pool. */
async function planOf(pool: pg.Pool, hash: Buffer): Promise<string> {
  let sql = '';
  const spy = { query: (text: string) => ((sql = text), Promise.resolve({ rows: [] })) } as unknown as Queryable;
  await findKeyByHash(spy, hash);
  const { rows } = await pool.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${sql}`, [hash]);
  const scans: string[] = [];
  const walk = (node: Record<string, unknown>) => {
    if (node['Relation Name'] === 'apikeys') scans.push(`${String(node['Node Type'])}${node['Index Name'] ? ` using ${String(node['Index Name'])}` : ''}`);
    for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
  };
  const doc = rows[0]?.['QUERY PLAN'] as { Plan: Record<string, unknown> }[] | undefined;
  if (doc?.[0]) walk(doc[0].Plan);
  return scans.join(', ') || 'unknown';
}

interface Side { pool: pg.Pool; rows: number; hitTimes: Float64Array; missTimes: Float64Array }

async function timed(side: Side, hash: Buffer, expectFound: boolean): Promise<number> {
  const t = process.hrtime.bigint();
  const row = await findKeyByHash(side.pool, hash);
  const micros = Number(process.hrtime.bigint() - t) / 1e3;
  if (!!row !== expectFound) throw new Error(`a lookup among ${side.rows} keys answered wrongly (expected ${expectFound ? 'a row' : 'none'})`);
  return micros;
}

const stats = (a: Float64Array): LookupTimes => {
  const sorted = a.slice().sort();
  return { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99) };
};

export async function benchLookup(smallUrl: string, largeUrl: string, opts: LookupOptions = {}): Promise<LookupBenchResult> {
  const smallRows = opts.smallRows ?? 1000;
  const largeRows = opts.largeRows ?? 1_000_000;
  const lookups = opts.lookups ?? 10_000;
  const log = opts.log ?? (() => {});
  // One connection each, as one request's lookup sees it: no pool contention in the figure.
  const small: Side = { pool: new pg.Pool({ connectionString: smallUrl, max: 1 }), rows: smallRows, hitTimes: new Float64Array(lookups), missTimes: new Float64Array(lookups) };
  const large: Side = { pool: new pg.Pool({ connectionString: largeUrl, max: 1 }), rows: largeRows, hitTimes: new Float64Array(lookups), missTimes: new Float64Array(lookups) };
  try {
    await storeKeys(small.pool, smallRows);
    const started = process.hrtime.bigint();
    await storeKeys(large.pool, largeRows);
    const insertSeconds = Number(process.hrtime.bigint() - started) / 1e9;
    log(`  ${smallRows.toLocaleString('en')} and ${largeRows.toLocaleString('en')} keys stored (the million in ${insertSeconds.toFixed(1)} s); ${lookups.toLocaleString('en')} hits and as many misses on each`);

    const hitOf = (s: Side) => keyHash(1 + Math.floor(Math.random() * s.rows));
    for (let i = 0; i < 1000; i++) {
      for (const s of [small, large]) {
        await timed(s, hitOf(s), true);
        await timed(s, missHash(), false);
      }
    }
    for (let i = 0; i < lookups; i++) {
      const order = i % 2 ? [small, large] : [large, small];
      for (const s of order) {
        s.hitTimes[i] = await timed(s, hitOf(s), true);
        s.missTimes[i] = await timed(s, missHash(), false);
      }
    }
    const at = async (s: Side): Promise<LookupAt> => ({ rows: s.rows, hits: stats(s.hitTimes), misses: stats(s.missTimes), plan: await planOf(s.pool, keyHash(s.rows)) });
    return { small: await at(small), large: await at(large), insertSeconds };
  } finally {
    await small.pool.end();
    await large.pool.end();
  }
}
