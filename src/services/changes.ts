import type { Pool } from '../store/db.ts';
import { findLatestChangeId, listChangesSince, pruneChanges, type ChangesSince, type ReadOnce } from '../store/changes.ts';
import type { Forget } from './invalidation.ts';

// What an instance missed while its signal channel was away, read back from the change record
// instead of emptying its caches: emptied, every cached key's next request would go to the
// database at the same moment, on every instance that lost the channel together.

/**
 * How far before the channel was lost the catch-up re-reads, whatever the numbers. A change is
 * numbered when its transaction records it but heard when it commits, so a lower number can
 * commit after a higher one was heard; a transaction open this long at the loss is covered.
 * Forgetting a key twice costs one lookup, missing a revocation does not, so it errs wide.
 */
export const CATCH_UP_MARGIN_MS = 60_000;
/** How long the record keeps a change: a channel away longer than this falls back to forgetting all. */
export const CHANGES_KEPT_MS = 24 * 60 * 60 * 1000;
/** More missed changes than this: forgetting everything is cheaper than forgetting each. */
export const MAX_CATCH_UP = 10_000;
/**
 * How long a catch-up keeps trying to read the record before giving up on it. A server that just
 * restarted answers the signal's direct connection before a pooler in front of it takes logins
 * again (PgBouncer's server_login_retry, 15 s by default): caches are dropped only when the record
 * stays unreadable this long, not at its first refusal.
 */
export const CATCH_UP_RETRY_MS = 20_000;
const CATCH_UP_PAUSE_MS = 500;

export type CatchUp =
  | { status: 'caught-up'; changes: number; afterChange: number; policy: boolean }
  | { status: 'cannot-reach-back'; reason: string };

export interface ChangeFollower {
  /** Notes the highest change recorded so far; run once the channel listens. */
  start(): Promise<void>;
  /** A signal heard on the channel, with its number (null from a sender that recorded none). */
  heard(change: number | null): void;
  /**
   * Forgets each key and user changed since the last change heard (and within the margin before
   * the channel last proved itself, `unheardMs` ago); says whether the policy changed. When the
   * record cannot say what was missed, forgets nothing and says why: the caller starts over.
   * `read` is the signal channel's own connection, tried first; then the pool, until the record
   * has been unreadable for `retryMs`.
   */
  catchUp(unheardMs: number, read?: ReadOnce): Promise<CatchUp>;
  /** Drops changes older than the record keeps; the hourly sweep runs it. */
  prune(): Promise<number>;
}

export function createChangeFollower({
  pool, forget, marginMs = CATCH_UP_MARGIN_MS, nowMs = Date.now, retryMs = CATCH_UP_RETRY_MS,
}: { pool: Pool; forget: Forget; marginMs?: number; nowMs?: () => number; retryMs?: number }): ChangeFollower {
  let lastHeard: number | null = null;
  // When a signal without a number was last heard: an instance or CLI of the earlier release, which
  // records nothing, so what it changed while the channel was away is not in the record.
  let unnumberedAt = -Infinity;
  const note = (id: number) => {
    if (lastHeard === null || id > lastHeard) lastHeard = id;
  };

  const readRecord = async (from: number, recentMs: number, read: ReadOnce | undefined): Promise<ChangesSince> => {
    const giveUpAt = nowMs() + retryMs;
    for (let via: Pool | ReadOnce = read ?? pool; ; via = pool) {
      try {
        return await listChangesSince(via, from, recentMs, MAX_CATCH_UP);
      } catch (err) {
        if (nowMs() >= giveUpAt) throw err;
        await new Promise((r) => setTimeout(r, CATCH_UP_PAUSE_MS));
      }
    }
  };

  return {
    async start() {
      note(await findLatestChangeId(pool));
    },
    heard(change) {
      if (change !== null) note(change);
      else unnumberedAt = nowMs();
    },
    async catchUp(unheardMs, read) {
      const from = lastHeard;
      if (from === null) return { status: 'cannot-reach-back', reason: 'the last change heard was never read' };
      if (nowMs() - unnumberedAt < CHANGES_KEPT_MS) {
        return { status: 'cannot-reach-back', reason: 'a sender of an earlier release (no change record) signalled within the last day' };
      }
      try {
        const { oldest, rows } = await readRecord(from, unheardMs + marginMs, read);
        // Numbers are consecutive but for rolled-back changes; a gap here may be one, and is then
        // taken for a prune, which costs a start-over and never a missed change.
        if (oldest !== null && oldest > from + 1) {
          return { status: 'cannot-reach-back', reason: `changes after #${from} were pruned (the oldest kept is #${oldest})` };
        }
        if (rows.length > MAX_CATCH_UP) return { status: 'cannot-reach-back', reason: `more than ${MAX_CATCH_UP} changes were missed` };
        let policy = false;
        for (const { id, signal } of rows) {
          note(id);
          if (signal.type === 'policy') policy = true;
          else forget(signal);
        }
        return { status: 'caught-up', changes: rows.length, afterChange: from, policy };
      } catch (err) {
        const why = err instanceof Error ? err.message : String(err);
        return { status: 'cannot-reach-back', reason: `the change record could not be read: ${why}` };
      }
    },
    prune: () => pruneChanges(pool, CHANGES_KEPT_MS),
  };
}
