import type { Logger } from 'pino';
import type { ChangeFollower } from '../services/changes.ts';
import type { Clock, Every } from '../services/clock.ts';
import type { DeliveryWorker } from '../services/events/delivery.ts';
import { createEventSweep } from '../services/events/sweep.ts';
import type { GrantService } from '../services/oauth-grants.ts';
import { type Heartbeat, POLICY_CHECK_MS, type PolicyService } from '../services/policy/index.ts';
import type { UsageService } from '../services/usage.ts';
import { createWorkers, everyWorker, type Workers } from '../services/workers.ts';
import type { Pool } from '../store/db.ts';
import { logTaskFailure } from '../store/outage.ts';

const OAUTH_SWEEP_MS = 60 * 60 * 1000;

export interface WorkerDeps {
  pool: Pool;
  clock: Clock;
  logger: Logger;
  every: Every;
  changes: ChangeFollower;
  heartbeat: Heartbeat;
  policyService: PolicyService;
  grants: GrantService;
  usage: UsageService;
  sender: DeliveryWorker;
}

/** The gateway's background work: started once the instance is ready, stopped in reverse after its last request. */
export function backgroundWorkers(d: WorkerDeps): Workers {
  const { logger } = d;
  const eventSweep = createEventSweep({ pool: d.pool, clock: d.clock });
  // Expired codes, sessions, interactions and tokens, and clients never authorized, go hourly;
  // every instance sweeps, and a sweep that finds nothing costs two indexed deletes.
  const sweepHourly = async () => {
    try {
      const swept = await d.grants.sweep();
      if (swept.expired || swept.unusedClients || swept.endedGrants) logger.debug(swept, 'OAuth store swept');
    } catch (err) {
      logTaskFailure(logger, err, 'the OAuth store could not be swept; tried again within the hour');
    }
    // The change record is kept a day, for an instance whose signal channel was away to catch up.
    try {
      const pruned = await d.changes.prune();
      if (pruned) logger.debug({ pruned }, 'change record pruned');
    } catch (err) {
      logTaskFailure(logger, err, 'the change record could not be pruned; tried again within the hour');
    }
    try {
      const swept = await eventSweep();
      if (swept.warned || swept.pruned) logger.debug(swept, 'events swept: expiry warnings said, old events pruned');
    } catch (err) {
      logTaskFailure(logger, err, 'expiry warnings or the event prune failed; tried again within the hour');
    }
  };
  return createWorkers([
    { name: 'change follower', start: () => d.changes.start() },
    { name: 'heartbeat', start: () => d.heartbeat.start(), stop: () => d.heartbeat.stop() },
    // Besides the signal: a lost signal or a failed reload is caught up within one check.
    everyWorker('policy check', d.every, POLICY_CHECK_MS, () => d.policyService.check()),
    everyWorker('hourly sweeps', d.every, OAUTH_SWEEP_MS, sweepHourly),
    // After the server stopped taking requests, before the pool closes: the last tallies are kept.
    { name: 'usage flush', stop: () => d.usage.close() },
    d.sender,
  ]);
}
