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
export interface LookupAt {
  rows: number;
  hits: LookupTimes;
  misses: LookupTimes;
  /** How apikeys is read, e.g. "Index Scan using apikeys_key_hash_key". */
  plan: string;
  /** Median time of a hit inside PostgreSQL (EXPLAIN ANALYZE), µs: planning, then execution. */
  planMicros: number;
  serverMicros: number;
  /** Pages a hit touches, on average; and of those, read from outside shared_buffers. */
  pages: number;
  pagesRead: number;
}
export interface LookupBenchResult {
  small: LookupAt;
  large: LookupAt;
  /** The large database again, with findKeyByHash's statement prepared once (a named statement). */
  prepared: { hits: LookupTimes; misses: LookupTimes };
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

/** The very statement findKeyByHash sends, caught on its way to the pool. */
async function lookupSql(): Promise<string> {
  let sql = '';
  const spy = { query: (q: string | { text: string }) => ((sql = typeof q === 'string' ? q : q.text), Promise.resolve({ rows: [] })) } as unknown as Queryable;
  await findKeyByHash(spy, keyHash(1));
  return sql;
}

interface PlanNode { 'Node Type'?: string; 'Relation Name'?: string; 'Index Name'?: string; 'Shared Hit Blocks'?: number; 'Shared Read Blocks'?: number; Plans?: PlanNode[] }

/**
 * How PostgreSQL runs the lookup: the scan of apikeys, and over `samples` random hits the median
 * time spent in the server and the pages touched, from shared buffers or read from outside them.
 */
async function explain(pool: pg.Pool, rows: number, samples = 200): Promise<Pick<LookupAt, 'plan' | 'planMicros' | 'serverMicros' | 'pages' | 'pagesRead'>> {
  const sql = await lookupSql();
  const times = new Float64Array(samples);
  const planning = new Float64Array(samples);
  let pages = 0;
  let read = 0;
  let plan = 'unknown';
  for (let i = 0; i < samples; i++) {
    const { rows: out } = await pool.query<{ 'QUERY PLAN': { Plan: PlanNode; 'Planning Time': number; 'Execution Time': number }[] }>(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`, [keyHash(1 + Math.floor(Math.random() * rows))]);
    const doc = out[0]?.['QUERY PLAN'][0];
    if (!doc) continue;
    times[i] = doc['Execution Time'] * 1000;
    planning[i] = doc['Planning Time'] * 1000;
    pages += (doc.Plan['Shared Hit Blocks'] ?? 0) + (doc.Plan['Shared Read Blocks'] ?? 0);
    read += doc.Plan['Shared Read Blocks'] ?? 0;
    const scans: string[] = [];
    const walk = (node: PlanNode) => {
      if (node['Relation Name'] === 'apikeys') scans.push(`${node['Node Type'] ?? '?'}${node['Index Name'] ? ` using ${node['Index Name']}` : ''}`);
      for (const child of node.Plans ?? []) walk(child);
    };
    walk(doc.Plan);
    plan = scans.join(', ') || plan;
  }
  return { plan, planMicros: quantile(planning.sort(), 0.5), serverMicros: quantile(times.sort(), 0.5), pages: pages / samples, pagesRead: read / samples };
}

interface Side { pool: pg.Pool; db: Queryable; rows: number; hitTimes: Float64Array; missTimes: Float64Array }

function side(url: string, rows: number, lookups: number, prepared = false): Side {
  // One connection each, as one request's lookup sees it: no pool contention in the figure.
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  // findKeyByHash sends a named statement (parsed and planned once per connection); the plain
  // sides send the same text unnamed, planned on every lookup, to show what naming it saves.
  const db = prepared
    ? pool
    : ({ query: (q: { text: string; values: unknown[] }) => pool.query(q.text, q.values) } as unknown as Queryable);
  return { pool, db, rows, hitTimes: new Float64Array(lookups), missTimes: new Float64Array(lookups) };
}

async function timed(side: Side, hash: Buffer, expectFound: boolean): Promise<number> {
  const t = process.hrtime.bigint();
  const row = await findKeyByHash(side.db, hash);
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
  const small = side(smallUrl, smallRows, lookups);
  const large = side(largeUrl, largeRows, lookups);
  const prepared = side(largeUrl, largeRows, lookups, true);
  const sides = [small, large, prepared];
  try {
    await storeKeys(small.pool, smallRows);
    const started = process.hrtime.bigint();
    await storeKeys(large.pool, largeRows);
    const insertSeconds = Number(process.hrtime.bigint() - started) / 1e9;
    log(`  ${smallRows.toLocaleString('en')} and ${largeRows.toLocaleString('en')} keys stored (the million in ${insertSeconds.toFixed(1)} s); ${lookups.toLocaleString('en')} hits and as many misses on each`);

    const hitOf = (s: Side) => keyHash(1 + Math.floor(Math.random() * s.rows));
    for (let i = 0; i < 1000; i++) {
      for (const s of sides) {
        await timed(s, hitOf(s), true);
        await timed(s, missHash(), false);
      }
    }
    for (let i = 0; i < lookups; i++) {
      // Each side goes first in turn.
      for (let j = 0; j < sides.length; j++) {
        const s = sides[(i + j) % sides.length]!;
        s.hitTimes[i] = await timed(s, hitOf(s), true);
        s.missTimes[i] = await timed(s, missHash(), false);
      }
    }
    const at = async (s: Side): Promise<LookupAt> => ({ rows: s.rows, hits: stats(s.hitTimes), misses: stats(s.missTimes), ...(await explain(s.pool, s.rows)) });
    return { small: await at(small), large: await at(large), prepared: { hits: stats(prepared.hitTimes), misses: stats(prepared.missTimes) }, insertSeconds };
  } finally {
    for (const s of sides) await s.pool.end();
  }
}
