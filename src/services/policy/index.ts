// The policy's life, one home. An instance holds and reloads the policy in force (live.ts), counts
// its decisions and evaluates a candidate beside it (observer.ts) and says what it has loaded
// (fleet.ts). An operator applies, rolls back, shadows, promotes, explains and asks after the
// fleet through `createPolicyAdmin`: the CLI and the console (src/services/console.ts) both call it.
import type { Pool } from '../../store/db.ts';
import type { Clock } from '../clock.ts';
import { fleetStatus, FLEET_HORIZON_MS, type FleetStatus } from './fleet.ts';
import { createShadowService, type ShadowService } from './shadow.ts';
import { createPolicyVersionService, type PolicyVersionService } from './versions.ts';

export {
  createPolicyService, POLICY_CHECK_MS, readPolicyFiles, readStoredPolicy, scopesFileFor,
  type BootResult, type LoadedPolicy, type PolicyFiles, type PolicyService,
} from './live.ts';
export {
  applyPolicy, createPolicyVersionService, engineOfTexts, textsOf, type ApplyOutcome, type Authorship, type PolicyVersionService,
} from './versions.ts';
export { createShadowService, type ShadowService } from './shadow.ts';
export { createDecisionObserver, DEFAULT_DENY, type DecisionObserver } from './observer.ts';
export {
  createHeartbeat, fleetStatus, fleetView, FLEET_HORIZON_MS, FLEET_RETENTION_MS, HEARTBEAT_MS,
  type FleetInstance, type FleetStatus, type Heartbeat,
} from './fleet.ts';
export { explain, type Explanation } from './explain.ts';
export { createVersionChanges, type VersionChanges } from './changes.ts';

export interface PolicyAdmin {
  /** Apply, rollback, history, and the engine of what the store holds. */
  versions: PolicyVersionService;
  /** The candidate: store, report, promote, drop. */
  shadow: ShadowService;
  /** Which version each instance runs, heard from within `horizonMs`. */
  fleet(horizonMs?: number): Promise<FleetStatus>;
}

export function createPolicyAdmin(deps: { pool: Pool; clock: Clock }): PolicyAdmin {
  return {
    versions: createPolicyVersionService(deps),
    shadow: createShadowService(deps),
    fleet: (horizonMs = FLEET_HORIZON_MS) => fleetStatus(deps, horizonMs),
  };
}
