import { LRUCache } from 'lru-cache';
import type { Pool } from '../../store/db.ts';
import * as keys from '../../store/apikeys.ts';
import { systemEvery, type Clock, type Every } from '../clock.ts';
import { sha256Hex } from '../secrets.ts';
import { hasValidChecksum } from './format.ts';
import { judgedAt, standingOf, UNKNOWN_KEY } from './auth-result.ts';
import type { AuthResult } from './types.ts';
import { createUnknownKeyGuard, type UnknownKeyGuardOptions } from './unknown-keys.ts';
import type { Invalidated } from '../invalidation.ts';

// Verifies presented keys without a database round trip per request. Records are cached by the
// key's hash; a change that can stop a key (revoke, update, ban, account deletion) drops them on
// every instance through a signal, and on the instance that made it at once. The TTL bounds how
// long a lost signal could keep a stale record alive.

export interface VerifierOptions {
  pool: Pool;
  clock: Clock;
  enabled: boolean;
  /** Whether the lookup may be a named prepared statement (not through a transaction pooler). */
  preparedStatements?: boolean;
  /** Bytes the cached records of stored keys may take (estimated per record, about 1.5 KB each, at least what they hold). */
  maxBytes?: number;
  /** Bytes the remembered unknown keys may take (about 200 each); kept apart so a flood of made-up keys cannot push real ones out. */
  unknownMaxBytes?: number;
  /** Bounds on lookups of keys the in-memory filter does not know (a flood of made-up keys). */
  unknownKeys?: Omit<UnknownKeyGuardOptions, 'pool' | 'clock'>;
  ttlMs?: number;
  /** How long "no such key" is remembered: short, since a key may be created meanwhile elsewhere. */
  negativeTtlMs?: number;
  /** How often last use is written, in one statement for all keys used meanwhile. */
  flushIntervalMs?: number;
  every?: Every;
  onLookup?: (result: LookupResult) => void;
}

/** miss: a database lookup; refused-unknown: not in the filter of stored keys, refused with no lookup. */
export type LookupResult = 'hit' | 'miss' | 'negative-hit' | 'malformed' | 'refused-unknown';

/** What is kept of a stored key: its standing, judged for expiry again at each use. */
interface Known {
  id: string;
  userId: string;
  expiresAt: Date | null;
  /** What the key means, its expiry aside (standingOf), built once when the row is read. */
  standing: AuthResult;
  bytes: number;
}
/** known: null when no such key is stored. The row itself is not kept: most of its columns are never read again. */
type Entry = { known: Known | null };


const UNKNOWN_ENTRY_BYTES = 200;
// Measured (test/bench/memory.ts --snapshots, 21,129 cached keys with short names and e-mail
// addresses, all holding the same permissions): 1.35 KB of live heap per cached key, its hash,
// index entries and the LRU's own arrays included (1.9 KB when each key had its own copy of its
// permissions and what decisions work out from them). 1.5 KB is counted, plus the strings that
// vary (two bytes a character at worst), so the byte bound errs on the side of fewer keys while
// keys share their permissions; were every cached key's permissions its own, it would hold about
// a quarter more than it counts.
function knownOf(row: keys.KeyWithOwnerRow): Known {
  return {
    id: row.id,
    userId: row.user_id,
    expiresAt: row.expires_at,
    standing: standingOf(row),
    bytes: 1500 + 2 * (row.name.length + row.owner_email.length + row.owner_name.length + JSON.stringify(row.permissions).length),
  };
}
const entryBytes = (entry: Entry) => entry.known?.bytes ?? UNKNOWN_ENTRY_BYTES;

export type KeyVerifier = ReturnType<typeof createKeyVerifier>;

export function createKeyVerifier(opts: VerifierOptions) {
  const { pool, clock } = opts;
  const byKeyId = new Map<string, string>();
  const byUserId = new Map<string, Set<string>>();
  const unindex = (hash: string, known: Known | null) => {
    if (!known) return;
    if (byKeyId.get(known.id) === hash) byKeyId.delete(known.id);
    const set = byUserId.get(known.userId);
    set?.delete(hash);
    if (set?.size === 0) byUserId.delete(known.userId);
  };
  const cache = new LRUCache<string, Entry>({
    maxSize: opts.maxBytes ?? 32 * 1024 * 1024,
    sizeCalculation: entryBytes,
    ttl: opts.ttlMs ?? 60_000,
    dispose: (entry, hash) => unindex(hash, entry.known),
    // Expiry follows the injected clock, so a test decides when "a while" has passed.
    perf: { now: () => clock().getTime() },
  });
  const unknown = new LRUCache<string, Entry>({
    maxSize: opts.unknownMaxBytes ?? 2 * 1024 * 1024,
    sizeCalculation: () => UNKNOWN_ENTRY_BYTES,
    ttl: opts.negativeTtlMs ?? 5_000,
  });
  const guard = createUnknownKeyGuard({ pool, clock, ...opts.unknownKeys });
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
    const row = await keys.findKeyByHash(pool, digest, opts.preparedStatements ?? true);
    const entry: Entry = { known: row ? knownOf(row) : null };
    if (row) guard.remember(digest);
    if (epoch !== started) return entry;
    if (!row) {
      unknown.set(hash, entry);
      return entry;
    }
    cache.set(hash, entry);
    byKeyId.set(row.id, hash);
    let set = byUserId.get(row.user_id);
    if (!set) byUserId.set(row.user_id, (set = new Set()));
    set.add(hash);
    return entry;
  }

  const flush = async () => {
    if (!lastUse.size) return;
    const uses = [...lastUse].map(([id, at]) => ({ id, at }));
    lastUse.clear();
    try {
      await keys.touchKeys(pool, uses);
    } catch {
      // Kept for the next flush (a use seen since is newer and wins): last use is advisory, but a
      // database that was away for a moment must not erase it.
      for (const u of uses) if (!lastUse.has(u.id)) lastUse.set(u.id, u.at);
    }
  };
  /** What the store says of a key this instance does not know: one lookup shared by concurrent asks. */
  const lookUp = async (hash: string): Promise<Entry> => {
    const digest = Buffer.from(hash, 'hex');
    let pending = inFlight.get(hash);
    if (!pending && !guard.mayExist(digest) && !guard.takeLookup()) {
      // Past the bound on lookups of keys the filter does not know: one shared read of the
      // keys created meanwhile decides instead of a lookup per key.
      await guard.refresh();
      if (!guard.mayExist(digest)) {
        opts.onLookup?.('refused-unknown');
        const none: Entry = { known: null };
        unknown.set(hash, none);
        return none;
      }
      pending = inFlight.get(hash);
    }
    if (!pending) {
      opts.onLookup?.('miss');
      const started: Promise<Entry> = load(hash, digest).finally(() => {
        if (inFlight.get(hash) === started) inFlight.delete(hash);
      });
      pending = started;
      inFlight.set(hash, started);
    }
    return pending;
  };

  /** What a known record means now: expiry is judged now, not when the record was cached. */
  const judge = (entry: Entry): AuthResult => {
    const known = entry.known;
    if (!known) return UNKNOWN_KEY;
    const now = clock();
    const result = judgedAt(known.standing, known.expiresAt, now);
    if (result.status === 'valid') lastUse.set(result.key.id, now);
    return result;
  };

  const stopFlushing = (opts.every ?? systemEvery)(opts.flushIntervalMs ?? 2_000, flush);

  return {
    /** At once for a key this instance knows (cached, or known not to exist); a promise when it must look. */
    authenticate(plaintext: string): AuthResult | Promise<AuthResult> {
      if (!opts.enabled || !hasValidChecksum(plaintext)) {
        opts.onLookup?.('malformed');
        return { status: 'unknown' };
      }
      const hash = sha256Hex(plaintext);
      const entry = cache.get(hash) ?? unknown.get(hash);
      if (!entry) return lookUp(hash).then(judge);
      opts.onLookup?.(entry.known ? 'hit' : 'negative-hit');
      return judge(entry);
    },

    /**
     * Drops what is known of one key (revoked, disabled, renamed, given an expiry, rotated) or of
     * every key of a user (banned, unbanned, a new role, deleted): after this instance's own change
     * commits, and on hearing another instance's signal.
     */
    forget(what: Invalidated) {
      invalidated();
      if (what.type === 'key') {
        const hash = byKeyId.get(what.id);
        if (hash) cache.delete(hash);
      } else {
        for (const hash of [...(byUserId.get(what.id) ?? [])]) cache.delete(hash);
      }
    },

    /** After a lost connection to the signal channel: anything may have changed meanwhile. */
    forgetAll() {
      invalidated();
      cache.clear();
      unknown.clear();
    },

    /** Heap estimated to be held by cached records of stored keys and by remembered unknown keys. */
    cacheBytes: () => ({ known: cache.calculatedSize, unknown: unknown.calculatedSize }),

    /** Reads the filter of stored keys; before it has, every well-formed key is looked up. */
    load: () => guard.load(),

    flush,

    async close() {
      stopFlushing();
      await flush();
    },
  };
}
