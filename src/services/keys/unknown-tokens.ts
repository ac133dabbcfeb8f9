import { LRUCache } from 'lru-cache';
import type { Queryable } from '../../store/db.ts';
import { readAllTokenHashPrefixes, readTokenHashPrefixesSince } from '../../store/key-hashes.ts';
import type { Clock } from '../clock.ts';
import { sha256 } from '../secrets.ts';
import { createUnknownKeyGuard } from './unknown-keys.ts';

// Anyone can make a value with keygate's token prefix and a checksum that holds, as with keys, and
// each one presented on the MCP endpoint was a database lookup. Made-up tokens get what made-up
// keys get: a filter of the first bytes of every live access token's hash, a bound on lookups of
// tokens it does not know (past it, one shared read of the tokens issued meanwhile decides), and a
// short memory of tokens found not to exist, so the same made-up token repeated costs nothing.

export interface UnknownTokenScreenOptions {
  pool: Queryable;
  clock: Clock;
  /** How long an access token lives: a token issued after a moment expires at least this long after it. */
  lifetimeMs: number;
  missLookupsPerSecond?: number;
  refreshEveryMs?: number;
  /** How long "no such token" is remembered. */
  negativeTtlMs?: number;
  /** How many tokens found not to exist are remembered at most (about 200 bytes each). */
  negativeMax?: number;
}

export type UnknownTokenScreen = ReturnType<typeof createUnknownTokenScreen>;

export function createUnknownTokenScreen(opts: UnknownTokenScreenOptions) {
  const { lifetimeMs } = opts;
  const guard = createUnknownKeyGuard({
    pool: opts.pool,
    clock: opts.clock,
    reads: { all: readAllTokenHashPrefixes, since: (db, since) => readTokenHashPrefixesSince(db, since, lifetimeMs) },
    missLookupsPerSecond: opts.missLookupsPerSecond,
    refreshEveryMs: opts.refreshEveryMs,
  });
  const unknown = new LRUCache<string, true>({ max: opts.negativeMax ?? 10_000, ttl: opts.negativeTtlMs ?? 5_000 });
  // Read once, when the first token is presented; a failed read is tried again by the next one.
  let loaded: Promise<void> | null = null;
  const load = () => (loaded ??= guard.load().catch((e: unknown) => {
    loaded = null;
    throw e;
  }));

  return {
    /** Whether a token-shaped value may be stored, so is worth a lookup; false when it surely is not. */
    async mayBeStored(token: string): Promise<boolean> {
      const digest = sha256(token);
      const hex = digest.toString('hex');
      if (unknown.has(hex)) return false;
      await load();
      if (guard.mayExist(digest) || guard.takeLookup()) return true;
      await guard.refresh();
      if (guard.mayExist(digest)) return true;
      unknown.set(hex, true);
      return false;
    },

    /** What a lookup found: a stored token is known from now on, a missing one remembered as such. */
    looked(token: string, stored: boolean): void {
      const digest = sha256(token);
      if (stored) guard.remember(digest);
      else unknown.set(digest.toString('hex'), true);
    },
  };
}
