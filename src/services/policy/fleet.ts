// Each instance says, on a schedule, which policy it has loaded (the heartbeat), so an operator can
// be told whether the whole fleet runs the live version (`fleetStatus`, what `keygate policy status`
// prints). The schedule and the clock are handed in, so a test beats on demand instead of waiting
// five seconds.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Pool } from '../../store/db.ts';
import { logTaskFailure } from '../../store/outage.ts';
import { forgetInstance, listInstancesSeenSince, recordHeartbeat, type InstanceRow } from '../../store/fleet.ts';
import { findCandidate, findLiveVersion } from '../../store/policy-versions.ts';
import type { Clock } from '../clock.ts';
import type { LoadedPolicy } from './live.ts';

export const HEARTBEAT_MS = 5_000;
/**
 * An instance not heard from for this long is silent: what it enforces is unknown, so it counts as
 * lagging (a frozen instance may still serve the old version), with its last report shown.
 */
export const FLEET_HORIZON_MS = 30_000;
/** How long a silent instance stays listed (one that stops on purpose leaves at once). */
export const FLEET_RETENTION_MS = 24 * 60 * 60 * 1000;

export interface Heartbeat {
  readonly instanceId: string;
  /** Records this instance's loaded policy now. */
  beat(): Promise<void>;
  /** Beats at once, then every `intervalMs`, until `stop`. */
  start(): void;
  stop(): void;
  /** Takes this instance off the list: a stop on purpose, not a silence. */
  leave(): Promise<void>;
}

export interface HeartbeatDeps {
  pool: Pool;
  clock: Clock;
  loaded: () => LoadedPolicy;
  /** Also run on each tick: the shadow divergence counts ride the same schedule. */
  onTick?: () => Promise<void>;
  intervalMs?: number;
  logger?: Pick<Logger, 'warn'> & Partial<Pick<Logger, 'debug'>>;
}

export function createHeartbeat({ pool, clock, loaded, onTick, intervalMs = HEARTBEAT_MS, logger }: HeartbeatDeps): Heartbeat {
  const instanceId = randomUUID();
  const startedAt = clock();
  let timer: NodeJS.Timeout | null = null;

  const beat = async () => {
    const { version, candidateId, lagReason } = loaded();
    await recordHeartbeat(pool, {
      instanceId, host: hostname(), pid: process.pid, policyVersion: version, shadowId: candidateId, lagReason, startedAt, seenAt: clock(),
    });
  };
  const tick = async () => {
    // A database that is down is reported by /readyz; the next tick tries again.
    await beat().catch((err: unknown) => logTaskFailure(logger, err, 'policy heartbeat not recorded'));
    await onTick?.().catch((err: unknown) => logTaskFailure(logger, err, 'heartbeat task failed'));
  };

  return {
    instanceId,
    beat,
    start() {
      if (timer) return;
      void tick();
      timer = setInterval(() => void tick(), intervalMs);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = null;
    },
    leave: () => forgetInstance(pool, instanceId),
  };
}

export interface FleetInstance extends InstanceRow {
  /** Not heard from within the horizon: it may have died, or be frozen still enforcing its version. */
  silent: boolean;
  /** Why it lags, as an operator reads it; null when it does not. */
  reason: string | null;
  /**
   * It has not loaded the live version (yet: instances reload within a second of a change), or its
   * last attempt to load it failed (`lagReason` says why; it retries every few seconds).
   */
  lagging: boolean;
}

export interface FleetStatus {
  liveVersion: number;
  /** The candidate under shadow evaluation, if any. */
  candidateId: number | null;
  /** Every instance heard from within the retention, silent ones included. */
  instances: FleetInstance[];
  /** How many of them lag. */
  lagging: number;
}

/**
 * The live version, the candidate, and what each instance heard from within `retentionMs` runs;
 * one silent for longer than `horizonMs` lags, since what it enforces now is unknown.
 */
export async function fleetStatus(
  { pool, clock }: { pool: Pool; clock: Clock },
  horizonMs = FLEET_HORIZON_MS,
  retentionMs = FLEET_RETENTION_MS,
): Promise<FleetStatus> {
  const now = clock().getTime();
  const seenSince = new Date(now - Math.max(retentionMs, horizonMs));
  const [live, candidate, seen] = await Promise.all([findLiveVersion(pool), findCandidate(pool), listInstancesSeenSince(pool, seenSince)]);
  const liveVersion = live?.version ?? 0;
  const instances = seen.map((i) => {
    const silent = i.seenAt.getTime() < now - horizonMs;
    const lastFailure = i.lagReason ? `; its last reload failed: ${i.lagReason}` : '';
    const behind = i.policyVersion !== liveVersion
      ? `version ${i.policyVersion} loaded, live is ${liveVersion}; it reloads within 5 s`
      : null;
    const reason = silent
      ? `silent since ${i.seenAt.toISOString()} (it last reported version ${i.policyVersion})${lastFailure}`
      : i.lagReason ?? behind;
    return { ...i, silent, reason, lagging: reason !== null };
  });
  return { liveVersion, candidateId: candidate?.id ?? null, instances, lagging: instances.filter((i) => i.lagging).length };
}

/** The fleet as the CLI's `status --json` and the console's API answer it: one shape for both. */
export const fleetView = (f: FleetStatus) => ({
  liveVersion: f.liveVersion,
  candidateId: f.candidateId,
  lagging: f.lagging,
  instances: f.instances.map((i) => ({
    instanceId: i.instanceId, host: i.host, pid: i.pid, policyVersion: i.policyVersion, candidateId: i.shadowId,
    seenAt: i.seenAt.toISOString(), lagging: i.lagging, lagReason: i.reason, silent: i.silent,
  })),
});
