import { type Client, type Pool, withTransaction } from '../store/db.ts';
import { signal, type Signal } from '../store/notify.ts';
import { recordChange, type Recorded } from './events/record.ts';

// A change that can stop a key working (revoke, update, rotation, ban, unban, role, deletion) must
// reach every gateway's cache of verified keys. The one way to make such a change: in a
// transaction that says what it invalidates. The signal is sent inside it, so the other instances
// hear of it only if it commits; this instance forgets right after commit, exact at once rather
// than when its own signal comes back.

/** What a change invalidates: one key, or every key of one user. */
export type Invalidated = Extract<Signal, { type: 'key' | 'user' }>;

/** Drops what a cache holds of what was invalidated; every instance runs it on hearing the signal too. */
export type Forget = (what: Invalidated) => void;

export interface Change {
  tx: Client;
  /** Tells every instance, when this transaction commits, that `what` changed. */
  invalidate(what: Invalidated): Promise<void>;
  /** Its audit entry and its event, committed with it. */
  record(r: Recorded): Promise<void>;
}

/**
 * Runs `fn` in one transaction; what it invalidates is signalled with it and forgotten by `forget`
 * (this instance's cache; none in the CLI) once it has committed. A change that rolls back
 * invalidates nothing.
 */
export async function withChange<T>(pool: Pool, forget: Forget | undefined, fn: (change: Change) => Promise<T>): Promise<T> {
  const invalidated: Invalidated[] = [];
  const result = await withTransaction(pool, (tx) =>
    fn({
      tx,
      async invalidate(what) {
        await signal(tx, what);
        invalidated.push(what);
      },
      record: async (r) => void (await recordChange(tx, r)),
    }),
  );
  for (const what of invalidated) forget?.(what);
  return result;
}
