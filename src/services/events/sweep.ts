import { listKeysExpiringBy } from '../../store/apikeys.ts';
import { withTransaction, type Pool } from '../../store/db.ts';
import { pruneEvents } from '../../store/outbox.ts';
import type { Clock } from '../clock.ts';
import { recordChange } from './record.ts';

/** `key.expiring` is said this long before a key's expiry. */
export const EXPIRY_WARNING_MS = 7 * 24 * 60 * 60 * 1000;
/** Events, their deliveries and every attempt's log are kept this long (an event as long as its newest attempt). */
export const EVENT_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/**
 * The hourly part of events: `key.expiring` for each key entering its last 7 days (said once per
 * key and expiry, whichever instance sweeps first; a new expiry is warned of again), and the prune.
 */
export function createEventSweep({ pool, clock }: { pool: Pool; clock: Clock }) {
  return async function sweep(): Promise<{ warned: number; pruned: number }> {
    const now = clock();
    let warned = 0;
    for (const k of await listKeysExpiringBy(pool, now, new Date(now.getTime() + EXPIRY_WARNING_MS))) {
      const expiresAt = k.expires_at!.toISOString();
      const said = await withTransaction(pool, (tx) => recordChange(tx, {
        event: {
          type: 'key.expiring', once: `key.expiring:${k.id}:${expiresAt}`,
          data: { keyId: k.id, userId: k.user_id, name: k.name, prefix: k.prefix, start: k.start, expiresAt },
        },
      }, now));
      if (said) warned++;
    }
    return { warned, pruned: await pruneEvents(pool, new Date(now.getTime() - EVENT_RETENTION_MS)) };
  };
}
