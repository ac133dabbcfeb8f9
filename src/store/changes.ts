import type { QueryResultRow } from 'pg';
import type { Queryable } from './db.ts';

// The change record (changes): one row per signal, written in the transaction that makes the
// change, numbered in the order the rows were inserted. Plain rows out.

/** What changed, as signalled to every instance: the policy, one key, or every key of one user. */
export type Signal = { type: 'policy' } | { type: 'key'; id: string } | { type: 'user'; id: string };

export interface ChangeRow { id: number; signal: Signal }

type Raw = { id: string; kind: Signal['type']; target: string | null };

const rowOf = (r: Raw): ChangeRow => ({
  id: Number(r.id),
  signal: r.kind === 'policy' ? { type: 'policy' } : { type: r.kind, id: r.target! },
});

/** Records the signal in the caller's transaction and answers its number. */
export async function recordChange(db: Queryable, s: Signal): Promise<number> {
  const { rows } = await db.query<{ id: string }>(
    'INSERT INTO changes (kind, target) VALUES ($1, $2) RETURNING id',
    [s.type, s.type === 'policy' ? null : s.id],
  );
  return Number(rows[0]!.id);
}

/** The highest number recorded, 0 before anything was. */
export async function findLatestChangeId(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ id: string | null }>('SELECT max(id) AS id FROM changes');
  return Number(rows[0]?.id ?? 0);
}

/** One statement on a connection that is not a pool's (the signal channel's own). */
export type ReadOnce = <R extends QueryResultRow>(text: string, values: unknown[]) => Promise<{ rows: R[] }>;

export interface ChangesSince {
  /** The lowest number still kept, null when nothing ever was recorded (the prune keeps the newest). */
  oldest: number | null;
  /** At most `limit` + 1 changes, in order: more than `limit` says there were more. */
  rows: ChangeRow[];
}

/**
 * In one statement (one snapshot, so a prune cannot fall between the two answers): the lowest
 * number kept, and in order every change numbered after `afterId` and every change recorded (by the
 * database's clock) within the last `recentMs`, whatever its number; at most `limit` + 1.
 */
export async function listChangesSince(db: Queryable | ReadOnce, afterId: number, recentMs: number, limit: number): Promise<ChangesSince> {
  const read: ReadOnce = typeof db === 'function' ? db : (text, values) => db.query(text, values);
  const { rows } = await read<{ oldest: string | null; id: string | null; kind: Signal['type'] | null; target: string | null }>(
    `SELECT o.oldest, c.id, c.kind, c.target
       FROM (SELECT min(id) AS oldest FROM changes) o
       LEFT JOIN LATERAL (
         SELECT id, kind, target FROM changes
          WHERE id > $1 OR recorded_at > now() - make_interval(secs => $2)
          ORDER BY id LIMIT $3
       ) c ON true`,
    [afterId, recentMs / 1000, limit + 1],
  );
  const oldest = rows[0]?.oldest == null ? null : Number(rows[0].oldest);
  return { oldest, rows: rows.filter((r) => r.id !== null).map((r) => rowOf({ id: r.id!, kind: r.kind!, target: r.target })) };
}

/**
 * Drops changes recorded more than `keepMs` ago, but never the newest one: a record that holds
 * nothing then means nothing was ever recorded, not that everything was pruned.
 */
export async function pruneChanges(db: Queryable, keepMs: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM changes
      WHERE recorded_at < now() - make_interval(secs => $1)
        AND id < (SELECT max(id) FROM changes)`,
    [keepMs / 1000],
  );
  return rowCount ?? 0;
}
