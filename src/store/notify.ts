import pg from 'pg';
import type { Queryable } from './db.ts';
import { recordChange, type Signal } from './changes.ts';

// Cross-instance signals over PostgreSQL LISTEN/NOTIFY: a policy reload, a key or user that must
// stop working. A NOTIFY sent inside a transaction is delivered only if it commits, and so is the
// row that records it in the change record, which an instance that was not listening reads later.

export const CHANNEL = 'keygate_events';

export type { Signal };

/** Records the signal and notifies it with its number; `db` is the transaction making the change. */
export async function signal(db: Queryable, s: Signal): Promise<void> {
  const change = await recordChange(db, s);
  await db.query('SELECT pg_notify($1, $2)', [CHANNEL, JSON.stringify({ ...s, change })]);
}

/** A payload as sent: the signal and, from a sender that recorded it, its number in the change record. */
function parsePayload(payload: string): { signal: Signal; change: number | null } | null {
  const p = JSON.parse(payload) as { type?: unknown; id?: unknown; change?: unknown };
  const change = typeof p.change === 'number' && Number.isSafeInteger(p.change) ? p.change : null;
  if (p.type === 'policy') return { signal: { type: 'policy' }, change };
  if ((p.type === 'key' || p.type === 'user') && typeof p.id === 'string') return { signal: { type: p.type, id: p.id }, change };
  return null;
}

export interface Listener { close(): Promise<void> }

export interface ChannelCheck {
  /** How often the LISTEN connection must prove it still answers. */
  intervalMs: number;
  /** How long a check (and a connect) may take before the connection counts as lost. */
  timeoutMs: number;
}

// At most 5 s between checks plus 2 s to answer plus the reconnect keeps a silently cut channel
// under the 10 s a revocation may take to reach every instance.
export const DEFAULT_CHANNEL_CHECK: ChannelCheck = { intervalMs: 5000, timeoutMs: 2000 };

const within = <T>(p: Promise<T>, ms: number): Promise<T> => {
  let t: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, fail) => (t = setTimeout(() => fail(new Error(`no answer within ${ms} ms`)), ms)));
  return Promise.race([p, late]).finally(() => clearTimeout(t));
};

/** What a listener knows of the time it was away, told on reconnecting. */
export interface Reconnected {
  /** How long ago the lost connection last proved it passed messages (connected, answered a check, or delivered a signal). */
  unheardMs: number;
  /**
   * A read on the connection that just came back, bounded like the channel's checks. The signal
   * comes over the direct URL: when DATABASE_URL is a pooler still refusing logins after the server
   * restarted, this connection already answers, so what was missed is read here.
   */
  read: <R extends pg.QueryResultRow>(text: string, values: unknown[]) => Promise<pg.QueryResult<R>>;
}

/**
 * Holds one connection in LISTEN. When it drops, it reconnects and calls `onReconnect`, since
 * signals sent while it was away are lost and whoever listens must resynchronise.
 *
 * A connection can also go silent without closing (a NAT or pooler forgetting it): the client
 * then sees no error and would wait for ever. So it is asked to answer a query every
 * `check.intervalMs`; one that does not answer in time is torn down and replaced like a closed one.
 */
export async function listen(
  connectionString: string,
  onSignal: (s: Signal, change: number | null) => void,
  onReconnect: (r: Reconnected) => void,
  check: ChannelCheck = DEFAULT_CHANNEL_CHECK,
): Promise<Listener> {
  let client: pg.Client | null = null;
  let closed = false;
  let timer: NodeJS.Timeout | null = null;
  let checking = false;
  // When the current connection last proved itself; kept from the first loss until a reconnect,
  // so retries that fail do not shorten the time the listener was away.
  let aliveAt = performance.now();
  let unheardSince: number | null = null;

  // Only the current connection may trigger a reconnect; a torn-down one's late events are noise.
  const lost = (c: pg.Client) => {
    if (client !== c && client !== null) return;
    client = null;
    unheardSince ??= aliveAt;
    c.removeAllListeners('notification');
    // end() would wait for a goodbye a silent peer never sends; destroying the socket does not.
    c.connection.stream.destroy();
    retry();
  };

  const connect = async (isRetry: boolean) => {
    if (closed) return;
    const c = new pg.Client({ connectionString, connectionTimeoutMillis: check.timeoutMs });
    c.on('error', () => lost(c));
    c.on('end', () => lost(c));
    c.on('notification', (msg) => {
      if (msg.channel !== CHANNEL || !msg.payload) return;
      if (client === c) aliveAt = performance.now();
      try {
        const heard = parsePayload(msg.payload);
        if (heard) onSignal(heard.signal, heard.change);
      } catch {
        // A payload we did not write; ignore it.
      }
    });
    try {
      await c.connect();
      await within(c.query(`LISTEN ${CHANNEL}`), check.timeoutMs);
      if (closed) {
        await c.end().catch(() => {});
        return;
      }
      client = c;
      aliveAt = performance.now();
      if (isRetry) {
        const unheardMs = Math.round(aliveAt - (unheardSince ?? aliveAt));
        unheardSince = null;
        onReconnect({ unheardMs, read: (text, values) => within(c.query(text, values), check.timeoutMs) });
      }
    } catch {
      client = c;
      lost(c);
    }
  };
  const retry = () => {
    if (closed || timer) return;
    client = null;
    timer = setTimeout(() => {
      timer = null;
      void connect(true);
    }, 500);
    timer.unref();
  };
  const heartbeat = setInterval(() => {
    const c = client;
    if (!c || checking || closed) return;
    checking = true;
    within(c.query('SELECT 1'), check.timeoutMs)
      .then(() => void (client === c && (aliveAt = performance.now())))
      .catch(() => lost(c))
      .finally(() => (checking = false));
  }, check.intervalMs);
  heartbeat.unref();

  // The first LISTEN is in place before the caller goes on, so no change made after start is missed.
  const ready = connect(false);
  await ready;

  return {
    async close() {
      closed = true;
      clearInterval(heartbeat);
      if (timer) clearTimeout(timer);
      await ready;
      const c = client;
      client = null;
      c?.removeAllListeners('end');
      if (c) await within(c.end(), check.timeoutMs).catch(() => c.connection.stream.destroy());
    },
  };
}
