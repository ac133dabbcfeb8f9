import type { Queryable } from '../../store/db.ts';
import { HASH_PREFIX_BYTES, readAllHashPrefixes, readHashPrefixesSince, type HashPrefixes } from '../../store/key-hashes.ts';
import type { Clock } from '../clock.ts';

// Anyone can make keys with a valid checksum (the CRC is public). Without a guard each one would
// cost a database lookup. So an instance keeps the first bytes of every stored key's hash: a
// presented key whose hash is not among them surely does not exist, unless it was created since
// the filter last looked. Such keys may still be looked up, up to `missLookupsPerSecond`; past
// that, instead of a lookup per key, the filter re-reads the keys created since it last looked (at
// most every `refreshEveryMs`, one indexed query for any number of waiting requests) and asks
// again. A real key created on another instance is therefore never refused for the flood; at
// worst it waits one refresh.

/** How the stored hashes are read: all of them, and those stored since a moment. */
export interface HashPrefixReads {
  all(db: Queryable): Promise<HashPrefixes>;
  since(db: Queryable, since: Date): Promise<HashPrefixes>;
}

const KEY_HASHES: HashPrefixReads = { all: readAllHashPrefixes, since: readHashPrefixesSince };

export interface UnknownKeyGuardOptions {
  pool: Queryable;
  clock: Clock;
  /** Default: API keys. */
  reads?: HashPrefixReads;
  missLookupsPerSecond?: number;
  refreshEveryMs?: number;
  /** How far before the previous read a refresh reaches, so a create that committed late is seen. */
  overlapMs?: number;
}

export type UnknownKeyGuard = ReturnType<typeof createUnknownKeyGuard>;

const prefixOf = (digest: Buffer) => digest.readUIntBE(0, HASH_PREFIX_BYTES);

export function createUnknownKeyGuard(opts: UnknownKeyGuardOptions) {
  const { pool, clock } = opts;
  const reads = opts.reads ?? KEY_HASHES;
  const rate = opts.missLookupsPerSecond ?? 100;
  const refreshEveryMs = opts.refreshEveryMs ?? 100;
  const overlapMs = opts.overlapMs ?? 10_000;
  // 48 bits of hash per key as a number: about 30 bytes each in a Set, and a false "maybe" is one
  // chance in 2^48 per stored key, costing only a lookup.
  const known = new Set<number>();
  let loaded = false;
  let since = new Date(0);
  let tokens = rate;
  let refilledAt = clock().getTime();
  let lastRefresh = 0;

  const take = (prefixes: Buffer) => {
    for (let at = 0; at + HASH_PREFIX_BYTES <= prefixes.length; at += HASH_PREFIX_BYTES) {
      known.add(prefixes.readUIntBE(at, HASH_PREFIX_BYTES));
    }
  };

  // A caller must be answered by a read that began after it asked: one already under way may have
  // missed its key. So callers join the read that has not begun yet, or queue one.
  let queued: Promise<void> | null = null;
  let running: Promise<void> | null = null;
  const queue = (): Promise<void> => {
    const p: Promise<void> = (running ?? Promise.resolve()).catch(() => {}).then(async () => {
      const wait = lastRefresh + refreshEveryMs - Date.now();
      if (wait > 0) await new Promise((ok) => setTimeout(ok, wait));
      queued = null;
      running = p;
      try {
        const read = await reads.since(pool, since);
        take(read.prefixes);
        since = new Date(read.readAt.getTime() - overlapMs);
      } finally {
        lastRefresh = Date.now();
        if (running === p) running = null;
      }
    });
    return p;
  };

  return {
    /** Reads every stored key's hash prefix; until then every key may exist. */
    async load() {
      const read = await reads.all(pool);
      take(read.prefixes);
      since = new Date(read.readAt.getTime() - overlapMs);
      loaded = true;
    },

    mayExist: (digest: Buffer) => !loaded || known.has(prefixOf(digest)),

    /** A key found stored (by a lookup): remember it, whatever the filter knew. */
    remember: (digest: Buffer) => void known.add(prefixOf(digest)),

    /** Whether a key the filter does not know may still be looked up now. */
    takeLookup(): boolean {
      const now = clock().getTime();
      tokens = Math.min(rate, tokens + ((now - refilledAt) / 1000) * rate);
      refilledAt = now;
      if (tokens < 1) return false;
      tokens -= 1;
      return true;
    },

    /** Reads the keys created since the last read; concurrent callers share one read. */
    refresh(): Promise<void> {
      return (queued ??= queue());
    },

    get size() {
      return known.size;
    },
  };
}
