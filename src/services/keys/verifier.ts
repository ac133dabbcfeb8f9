import { LRUCache } from 'lru-cache';
import type { Pool } from '../../store/db.ts';
import * as keys from '../../store/apikeys.ts';
import type { Clock } from '../clock.ts';
import { sha256 } from '../secrets.ts';
import { hasValidChecksum } from './format.ts';
import { authResultOf } from './service.ts';
import type { AuthResult } from './types.ts';

// Verifies presented keys without a database round trip per request. Records are cached by the
// key's hash; a change that can stop a key (revoke, update, ban, account deletion) drops them on
// every instance through a signal, and on the instance that made it at once. The TTL bounds how
// long a lost signal could keep a stale record alive.

export interface VerifierOptions {
  pool: Pool;
  clock: Clock;
  enabled: boolean;
  /** Most records kept; each is a few hundred bytes. */
  maxEntries?: number;
  ttlMs?: number;
  /** How long "no such key" is remembered: short, since a key may be created meanwhile elsewhere. */
  negativeTtlMs?: number;
  /** How often last use is written, in one statement for all keys used meanwhile. */
  flushIntervalMs?: number;
  onLookup?: (result: 'hit' | 'miss' | 'negative-hit' | 'malformed') => void;
}

type Entry = { row: keys.KeyWithOwnerRow | null };

export type KeyVerifier = ReturnType<typeof createKeyVerifier>;

export function createKeyVerifier(opts: VerifierOptions) {
  const { pool, clock } = opts;
  const byKeyId = new Map<string, string>();
  const byUserId = new Map<string, Set<string>>();
  const unindex = (hash: string, row: keys.KeyWithOwnerRow | null) => {
    if (!row) return;
    if (byKeyId.get(row.id) === hash) byKeyId.delete(row.id);
    const set = byUserId.get(row.user_id);
    set?.delete(hash);
    if (set?.size === 0) byUserId.delete(row.user_id);
  };
  const cache = new LRUCache<string, Entry>({
    max: opts.maxEntries ?? 100_000,
    ttl: opts.ttlMs ?? 60_000,
    dispose: (entry, hash) => unindex(hash, entry.row),
  });
  // Concurrent first requests with one key share one lookup.
  const inFlight = new Map<string, Promise<Entry>>();
  const lastUse = new Map<string, Date>();

  // Bumped by every invalidation. A lookup that was in flight across one read the row before the
  // change, so it answers its callers but is not cached.
  let epoch = 0;
  const invalidated = () => {
    epoch++;
    inFlight.clear();
  };

  async function load(hash: string, digest: Buffer): Promise<Entry> {
    const started = epoch;
    const row = await keys.findKeyByHash(pool, digest);
    const entry: Entry = { row };
    if (epoch !== started) return entry;
    cache.set(hash, entry, row ? {} : { ttl: opts.negativeTtlMs ?? 5_000 });
    if (row) {
      byKeyId.set(row.id, hash);
      let set = byUserId.get(row.user_id);
      if (!set) byUserId.set(row.user_id, (set = new Set()));
      set.add(hash);
    }
    return entry;
  }

  const flush = async () => {
    if (!lastUse.size) return;
    const uses = [...lastUse].map(([id, at]) => ({ id, at }));
    lastUse.clear();
    await keys.touchKeys(pool, uses).catch(() => {});
  };
  const timer = setInterval(() => void flush(), opts.flushIntervalMs ?? 2_000);
  timer.unref();

  return {
    async authenticate(plaintext: string): Promise<AuthResult> {
      if (!opts.enabled || !hasValidChecksum(plaintext)) {
        opts.onLookup?.('malformed');
        return { status: 'unknown' };
      }
      const digest = sha256(plaintext);
      const hash = digest.toString('hex');
      let entry = cache.get(hash);
      if (entry) {
        opts.onLookup?.(entry.row ? 'hit' : 'negative-hit');
      } else {
        let pending = inFlight.get(hash);
        if (!pending) {
          opts.onLookup?.('miss');
          const started: Promise<Entry> = load(hash, digest).finally(() => {
            if (inFlight.get(hash) === started) inFlight.delete(hash);
          });
          pending = started;
          inFlight.set(hash, started);
        }
        entry = await pending;
      }
      // Expiry is judged now, not when the record was cached.
      const result = authResultOf(entry.row, clock());
      if (result.status === 'valid') lastUse.set(result.key.id, clock());
      return result;
    },

    /** Drops what is known of one key (revoked, disabled, renamed, given an expiry). */
    forgetKey(keyId: string) {
      invalidated();
      const hash = byKeyId.get(keyId);
      if (hash) cache.delete(hash);
    },

    /** Drops every key of a user (banned, unbanned, deleted). */
    forgetUser(userId: string) {
      invalidated();
      for (const hash of [...(byUserId.get(userId) ?? [])]) cache.delete(hash);
    },

    /** After a lost connection to the signal channel: anything may have changed meanwhile. */
    forgetAll() {
      invalidated();
      cache.clear();
    },

    flush,

    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}
