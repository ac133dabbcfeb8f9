import type { Pool } from '../../store/db.ts';
import { withTransaction } from '../../store/db.ts';
import { recordChange } from './record.ts';

/** Whose day ran out: a key, or an OAuth grant (which spends its own quota). */
export interface Exhausted { subject: 'key' | 'grant'; id: string; userId: string; limit: number }

export interface ExhaustionDeps {
  pool: Pool;
  /** Told when the event could not be written; the next instance to refuse will try again. */
  onError?: (err: unknown) => void;
}

/**
 * `quota.exhausted`, said once per key or grant per UTC day. The request path only checks a set in
 * memory: this instance writes at most once per subject and day, and the event's once-key makes the
 * fleet say it once whichever instance refused first. A refused request writes nothing else.
 */
export function createExhaustionEvents({ pool, onError }: ExhaustionDeps) {
  let day = '';
  let said = new Set<string>();
  return function exhausted(who: Exhausted, now: Date): void {
    const today = now.toISOString().slice(0, 10);
    if (today !== day) {
      day = today;
      said = new Set();
    }
    const once = `quota.exhausted:${who.subject}:${who.id}:${today}`;
    if (said.has(once)) return;
    said.add(once);
    const data = { ...(who.subject === 'key' ? { keyId: who.id } : { grantId: who.id }), userId: who.userId, limit: who.limit, day: today };
    withTransaction(pool, (tx) => recordChange(tx, { event: { type: 'quota.exhausted', data, once } }, now)).catch((err: unknown) => {
      // Forgotten here, so a later refusal on this instance tries again.
      said.delete(once);
      onError?.(err);
    });
  };
}
export type ExhaustionEvents = ReturnType<typeof createExhaustionEvents>;
