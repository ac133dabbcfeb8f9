import pg from 'pg';
import type { Queryable } from './db.ts';

// Cross-instance signals over PostgreSQL LISTEN/NOTIFY: a policy reload, a key or user that must
// stop working. A NOTIFY sent inside a transaction is delivered only if it commits.

export const CHANNEL = 'keygate_events';

export type Signal = { type: 'policy' } | { type: 'key'; id: string } | { type: 'user'; id: string };

export async function signal(db: Queryable, s: Signal): Promise<void> {
  await db.query('SELECT pg_notify($1, $2)', [CHANNEL, JSON.stringify(s)]);
}

export interface Listener { close(): Promise<void> }

/**
 * Holds one connection in LISTEN. When it drops, it reconnects and calls `onReconnect`, since
 * signals sent while it was away are lost and whoever listens must resynchronise.
 */
export async function listen(connectionString: string, onSignal: (s: Signal) => void, onReconnect: () => void): Promise<Listener> {
  let client: pg.Client | null = null;
  let closed = false;
  let timer: NodeJS.Timeout | null = null;

  const connect = async (isRetry: boolean) => {
    if (closed) return;
    const c = new pg.Client({ connectionString });
    c.on('error', () => retry());
    c.on('end', () => retry());
    c.on('notification', (msg) => {
      if (msg.channel !== CHANNEL || !msg.payload) return;
      try {
        onSignal(JSON.parse(msg.payload) as Signal);
      } catch {
        // A payload we did not write; ignore it.
      }
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${CHANNEL}`);
      client = c;
      if (isRetry) onReconnect();
    } catch {
      await c.end().catch(() => {});
      retry();
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
  // The first LISTEN is in place before the caller goes on, so no change made after start is missed.
  const ready = connect(false);
  await ready;

  return {
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      await ready;
      await client?.end().catch(() => {});
    },
  };
}
