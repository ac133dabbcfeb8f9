import type { Pool } from '../../store/db.ts';
import { revokeLeakedKeys } from '../../store/apikeys.ts';
import { type AuditInsert, insertAuditEntries } from '../../store/audit.ts';
import type { Clock } from '../clock.ts';
import { actorOf } from '../events/types.ts';
import { type Forget, withChange } from '../invalidation.ts';

/** Where a key was found public, as the report says. */
export interface Leak { url: string; source: string }

/**
 * Keys revoked per transaction. A report may name 1,000 live keys and is answered within 10 s: one
 * commit per key is too slow for that, and one transaction for all of them would outlast the
 * request path's deadline on each use of the database (1.5 s by default).
 */
export const LEAKS_PER_CHANGE = 50;

export interface LeakRevokerDeps { pool: Pool; clock: Clock; forget?: Forget }

/**
 * Revokes keys found public (id → where each was found) on every instance: each change, audit entry
 * (API_KEY_LEAKED with the url and source, then API_KEY_REVOKED) and event (key.leaked, then
 * key.revoked with reason leaked) committed together, the signal with them, the cache dropped after
 * commit. The same rule as the key service's revoke, written for many keys at once. Answers the ids
 * that were live and are now revoked.
 */
export function createLeakRevoker({ pool, clock, forget }: LeakRevokerDeps) {
  return async function revokeLeaked(leaks: ReadonlyMap<string, Leak>): Promise<Set<string>> {
    const ids = [...leaks.keys()].sort();
    const done = new Set<string>();
    const actor = actorOf('system');
    const meta = { actorUserId: null, ip: null, userAgent: null };
    for (let i = 0; i < ids.length; i += LEAKS_PER_CHANGE) {
      const batch = ids.slice(i, i + LEAKS_PER_CHANGE).map((id) => ({ id, ...leaks.get(id)! }));
      const revoked = await withChange(pool, forget, async ({ tx, invalidate, record }) => {
        const rows = await revokeLeakedKeys(tx, batch, clock());
        const found = new Map(batch.map((l) => [l.id, l]));
        await insertAuditEntries(tx, rows.flatMap((k): AuditInsert[] => {
          const { url, source } = found.get(k.id)!;
          const about = { ...meta, ownerUserId: k.user_id, keyId: k.id };
          return [
            { type: 'API_KEY_LEAKED', ...about, detail: { url, source } },
            { type: 'API_KEY_REVOKED', ...about, detail: { reason: 'leaked' } },
          ];
        }));
        for (const k of rows) {
          const { url, source } = found.get(k.id)!;
          const about = { keyId: k.id, userId: k.user_id, name: k.name, prefix: k.prefix, start: k.start };
          await record({ event: { type: 'key.leaked', data: { ...about, url, source } } });
          await record({ event: { type: 'key.revoked', data: { ...about, reason: 'leaked', actor } } });
        }
        // One signal per owner: a key alone is named; several keys of one owner drop all that
        // owner's cached keys at once (the others are read again on their next use), one
        // statement instead of one per key.
        const owners = new Map<string, string[]>();
        for (const k of rows) owners.set(k.user_id, [...(owners.get(k.user_id) ?? []), k.id]);
        for (const [userId, keyIds] of owners) {
          await invalidate(keyIds.length === 1 ? { type: 'key', id: keyIds[0]! } : { type: 'user', id: userId });
        }
        return rows;
      });
      for (const k of revoked) done.add(k.id);
    }
    return done;
  };
}
