import { StoreUnavailableError } from '../errors.ts';
import { fromStoreOf, throughOutageOf } from './outage.ts';
import { Cluster } from 'ioredis';
import { REDIS_STORE, type RedisClient } from './quota/redis-client.ts';

// Counter writes that wait for replicas (keygate.yaml `redis.waitReplicas`), and what happens when
// the replicas do not answer. WAIT answers how many replicas have the write: a count fewer of them
// acknowledged is not served (its request is refused), since a failover could lose it. But a master
// with no replica to answer (a replica frozen or gone, a master just promoted whose old master
// Sentinel has not re-attached yet) would then refuse every request, each after a wait, for as long
// as that lasts. So refusals last at most REPLICA_GRACE_MS: past it the counters count on the
// master alone, as Redis's own min-replicas-to-write 0 does, told once, without WAIT, and one write
// a second waits again to notice a replica that acknowledges; the first that does ends it.

/** keygate.yaml's `redis.waitReplicas` and `redis.waitTimeoutMs`. */
export interface ReplicaWait { waitReplicas: number; waitTimeoutMs: number }

/** How long unacknowledged counts are refused before the counters count on the master alone. */
export const REPLICA_GRACE_MS = 1_000;
/** While counting alone, one write in this long still waits for the replicas. */
export const REPLICA_RETRY_MS = 1_000;

/** The counters began counting on the master alone (no replica acknowledged), or a replica acknowledges again. */
export type ReplicaEvent =
  | { state: 'alone'; since: Date; acknowledged: number; wanted: number }
  | { state: 'replicated'; since: Date; aloneMs: number };

/** Whether the replicas acknowledge, for one Redis client (shared by the counters and the leased blocks). */
export class ReplicaGate {
  private unackedSince: number | null = null;
  private aloneSince: number | null = null;
  private lastTry = 0;
  private everAcknowledged = false;
  private readonly listeners = new Set<(e: ReplicaEvent) => void>();

  on(listener: (e: ReplicaEvent) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** Whether this write waits for the replicas: always, but while counting alone once a second. */
  waits(now = Date.now()): boolean {
    if (this.aloneSince === null || now - this.lastTry >= REPLICA_RETRY_MS) {
      this.lastTry = now;
      return true;
    }
    return false;
  }

  /** WAIT's answer to a write: true when the write must be given back and its request refused. */
  answered(acknowledged: number, wanted: number, now = Date.now()): boolean {
    if (acknowledged >= wanted) {
      this.everAcknowledged = true;
      this.unackedSince = null;
      if (this.aloneSince !== null) {
        const since = this.aloneSince;
        this.aloneSince = null;
        this.emit({ state: 'replicated', since: new Date(since), aloneMs: now - since });
      }
      return false;
    }
    if (this.aloneSince !== null) return false;
    this.unackedSince ??= now;
    // A master that never had its writes acknowledged since this instance started has no replica
    // to wait for (a lone Redis): there is nothing a refusal would protect.
    if (this.everAcknowledged && now - this.unackedSince < REPLICA_GRACE_MS) return true;
    this.aloneSince = now;
    this.emit({ state: 'alone', since: new Date(now), acknowledged, wanted });
    return false;
  }

  private emit(e: ReplicaEvent): void {
    for (const l of this.listeners) l(e);
  }
}

const gates = new WeakMap<object, ReplicaGate>();

/** The replica gate of a Redis client, made on first use. */
export function replicaGateOf(redis: RedisClient): ReplicaGate {
  let gate = gates.get(redis);
  if (!gate) gates.set(redis, (gate = new ReplicaGate()));
  return gate;
}

const NOT_ACKNOWLEDGED = 'no replica acknowledged the count in time';

/** A refusal because the replicas did not acknowledge: not the counter's failure, so not failed fast. */
export const isUnacknowledged = (err: unknown): boolean =>
  err instanceof StoreUnavailableError && err.cause instanceof Error && err.cause.message === NOT_ACKNOWLEDGED;

export interface CounterWrite {
  script: string;
  keys: string[];
  args: (string | number)[];
}

interface Answered { value: unknown; acknowledged: number }
interface Waiting { write: CounterWrite; ok: (a: Answered) => void; fail: (e: unknown) => void }

/**
 * Redis runs one connection's commands in order, and a WAIT holds the ones behind it: a WAIT per
 * write would queue each write behind every WAIT before it (a frozen replica: waitTimeoutMs each).
 * So one pipeline with a WAIT is in flight at a time, and the writes that come meanwhile go
 * together in the next one, behind one WAIT that covers them all: a write waits for at most the WAIT
 * in flight and its own. A Cluster refuses pipelines across slots, so there each write is its own.
 */
class WaitBatcher {
  private inFlight = false;
  private queue: Waiting[] = [];
  constructor(private readonly redis: RedisClient, private readonly wait: ReplicaWait) {}

  write(write: CounterWrite): Promise<Answered> {
    return new Promise((ok, fail) => {
      this.queue.push({ write, ok, fail });
      this.pump();
    });
  }

  private pump(): void {
    if (this.inFlight || !this.queue.length) return;
    const batch = this.redis instanceof Cluster ? this.queue.splice(0, 1) : this.queue.splice(0);
    this.inFlight = true;
    const pipeline = this.redis.pipeline();
    for (const { write: w } of batch) pipeline.eval(w.script, w.keys.length, ...w.keys, ...w.args);
    pipeline.call('WAIT', this.wait.waitReplicas, this.wait.waitTimeoutMs);
    // The pipeline is not one of the client's wrapped commands: its failure goes through the same
    // translation, so it is part of the one outage that is logged, and its answer can end one.
    throughOutageOf(this.redis, pipeline.exec()).then((answers) => {
      const [waitErr, acked] = answers?.[batch.length] ?? [new Error('no answer'), null];
      const acknowledged = waitErr ? 0 : Number(acked);
      batch.forEach(({ ok, fail }, i) => {
        const [err, value] = answers?.[i] ?? [new Error('no answer'), null];
        if (err) fail(err);
        else ok({ value, acknowledged });
      });
    }, (err: unknown) => batch.forEach(({ fail }) => fail(err))).finally(() => {
      this.inFlight = false;
      this.pump();
    });
  }
}

const batchers = new WeakMap<object, WaitBatcher>();

/**
 * Runs a counter-writing script; with `waitReplicas` above 0 a WAIT follows it in the same round
 * trip (WaitBatcher), and its answer decides (ReplicaGate).
 */
export async function evalWrite(redis: RedisClient, wait: ReplicaWait | undefined, write: CounterWrite): Promise<unknown> {
  const { script, keys, args } = write;
  const gate = wait && wait.waitReplicas > 0 ? replicaGateOf(redis) : null;
  if (!wait || !gate?.waits()) return redis.eval(script, keys.length, ...keys, ...args);
  let batcher = batchers.get(redis);
  if (!batcher) batchers.set(redis, (batcher = new WaitBatcher(redis, wait)));
  let answer: Answered;
  try {
    answer = await batcher.write(write);
  } catch (e) {
    if (e instanceof StoreUnavailableError) throw e;
    // A client not made by createRedisClient has no translation: its failure is made an outage here.
    throw fromStoreOf(redis, new StoreUnavailableError(REDIS_STORE, e instanceof Error ? e : new Error(String(e))));
  }
  if (!gate.answered(answer.acknowledged, wait.waitReplicas)) return answer.value;
  // A failover could lose this count: it is not served. It stays counted on this master: taking it
  // back was tried, and across a planned failover it let a key be served past its limit.
  throw fromStoreOf(redis, new StoreUnavailableError(REDIS_STORE, new Error(NOT_ACKNOWLEDGED)));
}
