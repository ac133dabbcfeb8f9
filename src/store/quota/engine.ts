// The counter engines: where every count shared by the gateway instances lives (request quotas,
// daily creates, sign-in failures). One engine per store, each a whole set of the same operations,
// so the composition root picks one (open.ts) and nothing else asks which it got:
//   redis.ts, redis-client.ts, redis-keys.ts, redis-counters.ts, redis-blocks.ts   Redis
//   replica-wait.ts, sentinel-master.ts                                            Redis: waiting for replicas
//   postgres.ts, postgres-counters.ts, postgres-blocks.ts                          PostgreSQL
//   day.ts                                                                         the UTC day window
// The rules that spend them (the decision, grouping, leasing) are src/services/quota/.

/**
 * Fixed-window counters shared by every gateway instance. A store that does not answer rejects
 * with StoreUnavailableError (the client and the pool are made to, in redis-client.ts and
 * ../db.ts), so callers fail closed.
 */
export interface CounterStore {
  readonly kind: 'redis' | 'postgres';
  /** Adds one and returns the new value. The window is forgotten after `ttlSeconds`. */
  increment(name: string, windowStart: Date, ttlSeconds: number): Promise<number>;
  /** Takes one back after a spend that did not happen (a create that failed after counting). */
  decrement(name: string, windowStart: Date): Promise<void>;
  /** Forgets a window's count at once (a sign-in that succeeded clears its e-mail's failures). */
  reset(name: string, windowStart: Date): Promise<void>;
  /**
   * Counts `count` requests of one caller in every counter of `all` (a key's day and its windows),
   * as many of them as fit under every limit, in one atomic call: the first `granted` requests are
   * counted everywhere and the rest nowhere, so a refused request spends nothing. The first counter
   * names the group (on Redis the others are hash-tagged with its key, so a Cluster keeps them in
   * one slot).
   */
  spendAll(all: LimitedCounter[], count: number): Promise<SpendAllResult>;
  /** Current values, 0 where nothing was counted. */
  read(names: string[], windowStart: Date): Promise<number[]>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface LimitedCounter { name: string; windowStart: Date; limit: number; ttlSeconds: number }
export interface SpendAllResult {
  /** How many of the requests were counted: from 0 (none fitted) to `count`. */
  granted: number;
  /** Each counter's value after the call. */
  values: number[];
}

// Leased quota blocks (docs/speed.md): several requests' worth of a key's quota taken from the shared
// counter in one atomic call, so an instance need not make a round trip per request while the key
// has plenty left. A block is added to the very counter the one-by-one path increments, so both
// paths see one number; what a block leaves unspent is handed back by subtracting it. A block is
// also recorded in the counter store with an expiry, and its holder claims it a part at a time: a
// holder that dies (kill -9) or fails to hand back loses at most its last claimed part, and the
// rest returns to the key when the record expires.

export interface BlockGrant {
  /** How many requests the block holds; 0 when none was leased (too little left above the floor). */
  granted: number;
  /** The counter's value after the call: everything counted or leased in the window so far. */
  counted: number;
  /** The block's record in the counter store, for claim and handBack. */
  id: string;
  /** How much of the block the holder may spend at once; the rest stays recorded until claimed. */
  claimed: number;
}

export interface QuotaBlockStore {
  /**
   * Takes up to `want` from the window's counter, but never so much that less than `floor` of
   * `limit` would be left uncounted: the last `floor` requests are always counted one by one.
   * The block is recorded with what its holder has not yet claimed and an expiry `leaseMs` ahead;
   * every call first returns the unclaimed part of expired records to the counter.
   */
  lease(
    name: string, windowStart: Date, want: number, limit: number, floor: number, ttlSeconds: number, lease: LeaseTerms,
  ): Promise<BlockGrant>;
  /** Moves up to `want` of a block's record to its holder; 0 once the record has expired or gone. */
  claim(name: string, windowStart: Date, id: string, want: number, nowMs: number): Promise<number>;
  /** Gives back the unspent part of what was claimed, and whatever the record still holds. */
  handBack(name: string, windowStart: Date, id: string, unspent: number): Promise<void>;
  /**
   * Counts one request, refusing (without counting) at `limit`: the one-by-one path of a key that
   * may lease, so it too returns expired records first. Answers the count with this request.
   */
  spendOne(name: string, windowStart: Date, limit: number, ttlSeconds: number, nowMs: number): Promise<number>;
}

export interface LeaseTerms { id: string; claim: number; leaseMs: number; nowMs: number }

/** A check `/readyz` runs: it rejects when the store does not answer. */
export interface ReadinessProbe { name: string; check(): Promise<void> }

/** One store's whole set: its counters and blocks, how to ask it, name it and close it. */
export interface CounterEngine {
  counters: CounterStore;
  blocks: QuotaBlockStore;
  /** The engine's own readiness check; null where `/readyz` already asks its store (the database). */
  probe: ReadinessProbe | null;
  /** Where the counters live, for the start log: no password from a URL. */
  describe: string;
  /** PostgreSQL connections the engine may open, for the start log's connection budget. */
  postgresConnections: number;
  /** After the last request: stops watching the store's outages and closes its connections. */
  close(): Promise<void>;
}
