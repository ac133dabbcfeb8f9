import pg from 'pg';
import { StoreUnavailableError } from '../errors.ts';
import { OutageWatch, rejectAsOutage } from './outage.ts';

export type Pool = pg.Pool;
export type Client = pg.PoolClient;
/** Anything a query can run on: the pool, or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

// What node-postgres and the deadline below say when the database is out of reach.
const OUTAGE_MESSAGES = new RegExp([
  'Connection terminated', 'timeout exceeded when trying to connect', 'Client has encountered a connection error',
  'Query read timeout', 'database deadline passed',
].join('|'));

/**
 * A database that cannot be reached (refused, dropped, shutting down, not accepting connections, or
 * the pool timing out) is an outage, not a bug: the request fails closed with 503. Anything else (a
 * constraint, a bad statement) is the caller's to handle or a bug.
 */
function isOutage(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  // 57014: a statement cancelled by statement_timeout, the server-side half of the query deadline.
  if (typeof code === 'string') {
    if (/^(08|57P|53)/.test(code) || code === '55000' || code === '57014') return true;
    if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE'].includes(code)) return true;
  }
  return typeof message === 'string' && OUTAGE_MESSAGES.test(message);
}

/**
 * How long the request path waits on the database. A server that stops answering without closing
 * its connections (a stalled network, a frozen VM) would otherwise hold every request for as long as
 * it is frozen: with these, each query and each wait for a connection ends as an outage instead.
 */
export interface Deadlines {
  /** Each query's client-side deadline, and the longest wait for a pool connection. */
  queryTimeoutMs: number;
  /**
   * Also ask the server to cancel a statement past the deadline (statement_timeout, sent when the
   * connection starts). Off behind a transaction pooler, which refuses unknown startup parameters.
   */
  serverSide: boolean;
}

export const DEFAULT_QUERY_TIMEOUT_MS = 1_500;
export const DEFAULT_POOL_SIZE = 10;

/**
 * A pool whose queries, checkouts and checked-out clients reject with StoreUnavailableError naming
 * `store` when the database is out of reach: the one place PostgreSQL errors are read for that.
 * Without `deadlines` (migrations, the command line's direct pool) queries may take as long as
 * they need and a connection is waited for 5 s.
 */
export function createPool(connectionString: string, max = DEFAULT_POOL_SIZE, store = 'database', deadlines?: Deadlines): Pool {
  const timeouts = deadlines
    ? {
        connectionTimeoutMillis: deadlines.queryTimeoutMs,
        ...(deadlines.serverSide ? { statement_timeout: deadlines.queryTimeoutMs } : {}),
      }
    : { connectionTimeoutMillis: 5000 };
  const pool = new pg.Pool({ connectionString, max, ...timeouts });
  if (deadlines) oneDeadlinePerUse(pool, deadlines.queryTimeoutMs);
  // An idle client that loses its server must not crash the process; the next query fails instead.
  pool.on('error', () => {});
  // Only the request path's pools probe during an outage (so its end is told even if no request
  // comes); that store check's own failures are not refusals, so it runs below the translation.
  const probeQuery = pool.query.bind(pool) as (text: string) => Promise<unknown>;
  const watch = new OutageWatch(store, deadlines ? async () => {
    await probeQuery('SELECT 1');
    return null;
  } : undefined);
  pool.on('connect', (client) => {
    // The pool listens for errors only on idle clients. A checked-out client between two statements
    // (a transaction waiting on Redis, say) that hears its server die would emit an unheard error and
    // crash the process (test/faults/postgres.test.ts); its next query fails instead, as a 503.
    client.on('error', () => {});
    rejectAsOutage(client, ['query'], store, isOutage, watch);
  });
  rejectAsOutage(pool, ['query', 'connect'], store, isOutage, watch);
  return pool;
}

/** The request path's budget of each pool that has one: a transaction spends it whole, pool wait included. */
const budgets = new WeakMap<Pool, number>();

/** What a query past its use's deadline fails with; read as an outage like pg's own read timeout. */
const DEADLINE_PASSED = 'database deadline passed';

type QueryFn = (this: unknown, ...args: unknown[]) => unknown;

/**
 * A client's query, given what is left of `deadline` as its read timeout: a use of the database
 * that waited for its connection, or ran earlier statements of its transaction, has only the rest.
 */
function timedQuery(query: QueryFn, client: object, deadline: number): QueryFn {
  return function (...args: unknown[]): unknown {
    const [config, ...rest] = args;
    if (typeof rest[rest.length - 1] === 'function') return query.apply(client, args);
    const left = deadline - Date.now();
    if (left < 1) return Promise.reject(new Error(DEADLINE_PASSED));
    const timed = typeof config === 'string' ? { text: config, query_timeout: left } : { ...(config as object), query_timeout: left };
    return query.apply(client, [timed, ...rest]);
  };
}

/**
 * pg gives the wait for a pool connection and the query each their own timeout, so a query that
 * queued behind a stalled database could take both (3 s for a 1.5 s deadline). Here one use of the
 * pool, a query or a transaction, has one deadline that both the wait and the statements spend.
 */
function oneDeadlinePerUse(pool: Pool, budgetMs: number): void {
  budgets.set(pool, budgetMs);
  const connect = pool.connect.bind(pool) as () => Promise<Client>;
  const original = pool.query.bind(pool) as QueryFn;
  (pool as { query: QueryFn }).query = async function (...args: unknown[]): Promise<unknown> {
    if (typeof args[args.length - 1] === 'function') return original(...args);
    const deadline = Date.now() + budgetMs;
    const client = await connect();
    try {
      const result = await timedQuery(client.query as QueryFn, client, deadline)(...args);
      client.release();
      return result;
    } catch (e) {
      // A connection whose query failed may be one that stopped answering: never handed out again.
      client.release(e instanceof Error ? e : new Error(String(e)));
      throw e;
    }
  };
}

export async function withTransaction<T>(pool: Pool, fn: (client: Client) => Promise<T>): Promise<T> {
  const budgetMs = budgets.get(pool);
  const deadline = budgetMs === undefined ? undefined : Date.now() + budgetMs;
  const client = await pool.connect();
  let broken: Error | undefined;
  const query = client.query;
  if (deadline !== undefined) client.query = timedQuery(query, client, deadline) as typeof client.query;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (e) {
    // A connection that failed as an outage may be one that stopped answering: a ROLLBACK on it
    // would wait out another deadline. It is discarded instead (the server rolls back when it
    // goes), never handed to the next request.
    if (e instanceof StoreUnavailableError) broken = e;
    else await client.query('ROLLBACK').catch(() => {});
    throw e;
  } finally {
    client.query = query;
    client.release(broken);
  }
}

/** PostgreSQL gave up on a statement to break a lock cycle (40P01) or a serialization conflict (40001). */
export const isConflict = (err: unknown): boolean => {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return code === '40P01' || code === '40001';
};

/**
 * Runs a write again when PostgreSQL aborted it as a deadlock or serialization failure: such a write
 * did nothing, and trying it again is what PostgreSQL asks for. Batches that several instances write
 * take their rows in one order, so this is the last resort, not the rule.
 */
export async function retryOnConflict<T>(write: () => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await write();
    } catch (err) {
      if (!isConflict(err) || i >= attempts) throw err;
      await new Promise((r) => setTimeout(r, Math.random() * 20 * i));
    }
  }
}
