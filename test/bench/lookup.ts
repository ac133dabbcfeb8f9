// Whether a million stored keys slow verification down: the lookup verification runs
// (findKeyByHash) timed on a small table and again on a table of a million keys.
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { findKeyByHash } from '../../src/store/apikeys.ts';
import type { Queryable } from '../../src/store/db.ts';
import { quantile } from './load.ts';

export interface LookupTimes { p50: number; p99: number }
export interface LookupAt { rows: number; hits: LookupTimes; misses: LookupTimes }
export interface LookupBenchResult {
  small: LookupAt;
  large: LookupAt;
  /** Seconds to insert the rows up to `large.rows` and ANALYZE. */
  insertSeconds: number;
  /** How PostgreSQL reads apikeys for the lookup on the large table, e.g. "Index Scan using apikeys_key_hash_key". */
  plan: string;
}

export interface LookupOptions { smallRows?: number; largeRows?: number; lookups?: number; log?: (line: string) => void }

const keyHash = (i: number) => createHash('sha256').update(`bench-${i}`).digest();

// key_hash is computed as the store does (SHA-256 of the whole key); `'bench-'||i` stands in for
// the key, which is all the unique index sees.
async function insertKeys(pool: pg.Pool, userId: string, from: number, to: number): Promise<void> {
  await pool.query(
    `INSERT INTO apikeys (user_id, name, key_hash, start, prefix, permissions, request_quota)
     SELECT $1, 'bench ' || i, sha256(('bench-' || i)::bytea), 'key_' || substr(md5(i::text), 1, 8), 'key_', '{}', 100000000
       FROM generate_series($2::int, $3::int) AS i`,
    [userId, from, to],
  );
  await pool.query('ANALYZE apikeys');
}

/** One lookup at a time, as a request waits for its own: the latency of each, in µs. */
async function time(pool: pg.Pool, rows: number, lookups: number): Promise<LookupAt> {
  const hits: Buffer[] = [];
  const misses: Buffer[] = [];
  for (let i = 0; i < lookups; i++) {
    hits.push(keyHash(1 + Math.floor(Math.random() * rows)));
    misses.push(createHash('sha256').update(randomBytes(16)).digest());
  }
  for (let i = 0; i < 500; i++) await findKeyByHash(pool, i % 2 ? hits[i % lookups]! : misses[i % lookups]!);
  const hitTimes = new Float64Array(lookups);
  const missTimes = new Float64Array(lookups);
  // Alternated, so both see the same moments of the machine.
  for (let i = 0; i < lookups; i++) {
    let t = process.hrtime.bigint();
    const hit = await findKeyByHash(pool, hits[i]!);
    hitTimes[i] = Number(process.hrtime.bigint() - t) / 1e3;
    t = process.hrtime.bigint();
    const miss = await findKeyByHash(pool, misses[i]!);
    missTimes[i] = Number(process.hrtime.bigint() - t) / 1e3;
    if (!hit || miss) throw new Error(`lookup ${i} on ${rows} rows answered wrongly (hit found: ${!!hit}, miss found: ${!!miss})`);
  }
  const stats = (a: Float64Array): LookupTimes => {
    a.sort();
    return { p50: quantile(a, 0.5), p99: quantile(a, 0.99) };
  };
  return { rows, hits: stats(hitTimes), misses: stats(missTimes) };
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

export async function benchLookup(databaseUrl: string, opts: LookupOptions = {}): Promise<LookupBenchResult> {
  const smallRows = opts.smallRows ?? 1000;
  const largeRows = opts.largeRows ?? 1_000_000;
  const lookups = opts.lookups ?? 5000;
  const log = opts.log ?? (() => {});
  // One connection, as one request's lookup sees it: no pool contention in the figure.
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    const { rows } = await pool.query<{ id: string }>(
      `INSERT INTO users (email, name, password_hash) VALUES ('bench-lookup@example.test', 'Bench lookups', 'not a password hash') RETURNING id`);
    const userId = rows[0]!.id;
    await insertKeys(pool, userId, 1, smallRows);
    log(`  ${smallRows.toLocaleString('en')} keys stored; timing ${lookups} hits and ${lookups} misses`);
    const small = await time(pool, smallRows, lookups);
    const started = process.hrtime.bigint();
    await insertKeys(pool, userId, smallRows + 1, largeRows);
    const insertSeconds = Number(process.hrtime.bigint() - started) / 1e9;
    log(`  ${largeRows.toLocaleString('en')} keys stored in ${insertSeconds.toFixed(1)} s; timing again`);
    const large = await time(pool, largeRows, lookups);
    const plan = await planOf(pool, keyHash(largeRows));
    return { small, large, insertSeconds, plan };
  } finally {
    await pool.end();
  }
}
