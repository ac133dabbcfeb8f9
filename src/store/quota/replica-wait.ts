import { StoreUnavailableError } from '../../errors.ts';
import { fromStoreOf, throughOutageOf } from '../outage.ts';
import { Cluster } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { REDIS_STORE, type RedisClient } from './redis-client.ts';
import { sentinelsNameMasterOf, type MasterCheck } from './sentinel-master.ts';

// Counter writes that wait for replicas (keygate.yaml `redis.waitReplicas`), and what happens when
// the replicas do not answer. WAIT answers how many replicas have the write: a count fewer of them
// acknowledged is not served (its request is refused), since a failover could lose it. But a master
// with no replica to answer (a replica frozen or gone, a master just promoted whose old master
// Sentinel has not re-attached yet) would then refuse every request, each after a wait, for as long
// as that lasts. So refusals last REPLICA_GRACE_MS: past it the counters count on the master
// alone, as Redis's own min-replicas-to-write 0 does, told once, without WAIT, and one write a
// second waits again to notice a replica that acknowledges; the first that does ends it. Except on
// a master being replaced: a Sentinel failover under way, or sentinels naming another master
// (MasterCheck), refusals go on until the client has moved (at most MASTER_CHECK_MS longer).
// A refused count is given back where it was made (giveBack).

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

/** While the master check says no, counts are refused and it is asked again this often... */
const RECHECK_MS = 200;
/** ...for at most this long past the grace: a failover under way is over well within it. */
const MASTER_CHECK_MS = 5_000;

/** Whether the replicas acknowledge, for one Redis client (shared by the counters and the leased blocks). */
export class ReplicaGate {
  private unackedSince: number | null = null;
  private aloneSince: number | null = null;
  private lastTry = 0;
  private everAcknowledged = false;
  private readonly listeners = new Set<(e: ReplicaEvent) => void>();
  /** The master check's answer: null before it is asked (or when it is to be asked again). */
  private verdict: 'asking' | 'no' | 'yes' | null = null;
  private askedAt = 0;
  constructor(private readonly mayCountAlone: MasterCheck | null = null) {}

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
      this.verdict = null;
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
    // Nor is counting alone begun on a master being replaced (MasterCheck), for a bounded while.
    const checking = now - this.unackedSince < REPLICA_GRACE_MS + MASTER_CHECK_MS;
    if (this.everAcknowledged && checking && !this.masterCleared(now)) return true;
    this.aloneSince = now;
    this.emit({ state: 'alone', since: new Date(now), acknowledged, wanted });
    return false;
  }

  /** Whether the master check allows counting alone now; asks it (in the background) when due. */
  private masterCleared(now: number): boolean {
    if (!this.mayCountAlone || this.verdict === 'yes') return true;
    if (this.verdict === 'asking' || (this.verdict === 'no' && now - this.askedAt < RECHECK_MS)) return false;
    this.verdict = 'asking';
    this.askedAt = now;
    // A check that cannot be answered does not keep the counts refused: refusals stay bounded.
    this.mayCountAlone().catch(() => true).then((yes) => {
      if (this.verdict === 'asking') this.verdict = yes ? 'yes' : 'no';
    });
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
  if (!gate) gates.set(redis, (gate = new ReplicaGate(redis instanceof Cluster ? null : sentinelsNameMasterOf(redis))));
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
  /**
   * What the script added, to which counters, read from its answer: taken back when the count is
   * refused as not acknowledged (see giveBack). None: a refused write stays counted.
   */
  counted?: (answer: unknown) => [key: string, amount: number][];
}

interface Answered { value: unknown; refused: boolean }
interface Waiting { write: CounterWrite; ok: (a: Answered) => void; fail: (e: unknown) => void }

/** How long a batch's marker is kept: a give-back that comes later finds none and takes nothing. */
const MARKER_TTL_MS = 60_000;

// KEYS: the marker, then the counters; ARGV: the batch's number, then what to take from each.
// Only a dataset that holds the marker at this number holds the whole batch (see giveBack), and
// the marker goes with the first give-back, so a give-back sent twice takes once.
const GIVE_BACK = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then redis.call('DECRBY', KEYS[i], ARGV[i]) end
end
return 1`;

/** A key in the hash slot of `key` (its hash tag if it has one, else the whole key). */
function sameSlot(key: string, name: string): string {
  const open = key.indexOf('{');
  const close = open >= 0 ? key.indexOf('}', open + 1) : -1;
  return `{${close > open + 1 ? key.slice(open + 1, close) : key}}:${name}`;
}

/** Calls `changed` whenever one of the client's connections closes (a reconnect may land elsewhere). */
function onConnectionChange(redis: RedisClient, changed: () => void): void {
  if (!(redis instanceof Cluster)) {
    redis.on('close', changed);
    return;
  }
  for (const node of redis.nodes()) node.on('close', changed);
  redis.on('+node', (node: { on(event: 'close', f: () => void): void }) => node.on('close', changed));
  redis.on('-node', changed);
}

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
  private batches = 0;
  private connections = 0;
  private readonly marker = `keygate:written:${randomUUID()}`;
  constructor(private readonly redis: RedisClient, private readonly wait: ReplicaWait, private readonly gate: ReplicaGate) {
    onConnectionChange(redis, () => void this.connections++);
  }

  write(write: CounterWrite): Promise<Answered> {
    return new Promise((ok, fail) => {
      this.queue.push({ write, ok, fail });
      this.pump();
    });
  }

  private pump(): void {
    if (this.inFlight || !this.queue.length) return;
    const cluster = this.redis instanceof Cluster;
    const batch = cluster ? this.queue.splice(0, 1) : this.queue.splice(0);
    this.inFlight = true;
    const number = String(++this.batches);
    const marker = cluster ? sameSlot(batch[0]!.write.keys[0]!, this.marker) : this.marker;
    const connection = this.connections;
    const pipeline = this.redis.pipeline();
    for (const { write: w } of batch) pipeline.eval(w.script, w.keys.length, ...w.keys, ...w.args);
    pipeline.set(marker, number, 'PX', MARKER_TTL_MS);
    pipeline.call('WAIT', this.wait.waitReplicas, this.wait.waitTimeoutMs);
    // The pipeline is not one of the client's wrapped commands: its failure goes through the same
    // translation, so it is part of the one outage that is logged, and its answer can end one.
    throughOutageOf(this.redis, pipeline.exec()).then((answers) => {
      const noAnswer = [new Error('no answer'), null] as const;
      const [waitErr, acked] = answers?.[batch.length + 1] ?? noAnswer;
      const refused = this.gate.answered(waitErr ? 0 : Number(acked), this.wait.waitReplicas);
      const [markErr] = answers?.[batch.length] ?? noAnswer;
      // Given back only when the whole batch ran on one connection, so on one server, and marked.
      if (refused && !markErr && connection === this.connections) this.giveBack(batch, answers!, marker, number);
      batch.forEach(({ ok, fail }, i) => {
        const [err, value] = answers?.[i] ?? noAnswer;
        if (err) fail(err);
        else ok({ value, refused });
      });
    }, (err: unknown) => batch.forEach(({ fail }) => fail(err))).finally(() => {
      this.inFlight = false;
      this.pump();
    });
  }

  /**
   * Takes back what a refused batch counted, so a request refused for want of acknowledgement does
   * not use up its key's quota. Best effort and never too much: it may reach another master than
   * the one that counted (a failover moves the client), which holds the batch only if the counts
   * were replicated to it before. Replication keeps one server's order, so a dataset holding the
   * marker set after the batch's scripts holds all of them, and the give-back takes only where the
   * marker is found at this batch's number. The next batch is sent after this, so the number cannot
   * have moved on. Where it is not found (or the give-back is lost), the counts stay: a key loses
   * at most one batch's worth, never gains.
   */
  private giveBack(batch: Waiting[], answers: [Error | null, unknown][], marker: string, number: string): void {
    const taken = batch.flatMap(({ write }, i) => (answers[i]![0] || !write.counted ? [] : write.counted(answers[i]![1])))
      .filter(([, n]) => n > 0);
    if (!taken.length) return;
    this.redis.eval(GIVE_BACK, 1 + taken.length, marker, ...taken.map(([k]) => k), number, ...taken.map(([, n]) => n))
      .catch(() => {});
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
  if (!batcher) batchers.set(redis, (batcher = new WaitBatcher(redis, wait, gate)));
  let answer: Answered;
  try {
    answer = await batcher.write(write);
  } catch (e) {
    if (e instanceof StoreUnavailableError) throw e;
    // A client not made by createRedisClient has no translation: its failure is made an outage here.
    throw fromStoreOf(redis, new StoreUnavailableError(REDIS_STORE, e instanceof Error ? e : new Error(String(e))));
  }
  if (!answer.refused) return answer.value;
  // A failover could lose this count: it is not served, and its batch was given back where that is safe.
  throw fromStoreOf(redis, new StoreUnavailableError(REDIS_STORE, new Error(NOT_ACKNOWLEDGED)));
}
