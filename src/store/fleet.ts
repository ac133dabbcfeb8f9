import type { Queryable } from './db.ts';

// One row per gateway instance: which policy it has loaded, refreshed by its heartbeat.

export interface InstanceRow {
  instanceId: string;
  host: string;
  pid: number;
  policyVersion: number;
  shadowId: number | null;
  /** Why the instance could not load the live version at its last attempt; null when it could. */
  lagReason: string | null;
  startedAt: Date;
  seenAt: Date;
}

export async function recordHeartbeat(db: Queryable, i: InstanceRow): Promise<void> {
  await db.query(
    `INSERT INTO policy_instances (instance_id, host, pid, policy_version, shadow_id, lag_reason, started_at, seen_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (instance_id) DO UPDATE SET policy_version = excluded.policy_version, shadow_id = excluded.shadow_id,
       lag_reason = excluded.lag_reason, seen_at = excluded.seen_at`,
    [i.instanceId, i.host, i.pid, i.policyVersion, i.shadowId, i.lagReason, i.startedAt, i.seenAt],
  );
}

export async function listInstancesSeenSince(db: Queryable, since: Date): Promise<InstanceRow[]> {
  const { rows } = await db.query<InstanceRow>(
    `SELECT instance_id "instanceId", host, pid, policy_version "policyVersion", shadow_id::int "shadowId", lag_reason "lagReason",
            started_at "startedAt", seen_at "seenAt"
       FROM policy_instances WHERE seen_at >= $1 ORDER BY host, pid, instance_id`,
    [since],
  );
  return rows;
}

/** An instance that stops on purpose leaves the list; one that dies stays, shown as silent. */
export async function forgetInstance(db: Queryable, instanceId: string): Promise<void> {
  await db.query('DELETE FROM policy_instances WHERE instance_id = $1', [instanceId]);
}
