import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import { withTransaction, type Pool } from '../../store/db.ts';
import { claimDue, disableFailing, settleAttempt, type ClaimedRow } from '../../store/webhook-claims.ts';
import { insertAuditEntry } from '../../store/audit.ts';
import { logTaskFailure } from '../../store/outage.ts';
import { signedHeaders } from './signing.ts';
import { ATTEMPT_DEADLINE_MS, createSender } from './send.ts';
import { durationMs } from '../../config/duration.ts';

export type DeliveryOutcome = 'delivered' | 'retrying' | 'failed';

/**
 * PostgreSQL's foreign-key violation: the attempt's delivery was deleted while the attempt was in
 * flight (its endpoint deleted, or the event pruned), so its outcome has nowhere to be written.
 */
const deliveryGone = (err: unknown): boolean => (err as { code?: unknown } | null)?.code === '23503';

export interface DeliveryDeps {
  pool: Pool;
  config: Pick<Config, 'webhooks'>;
  logger: Logger;
  onOutcome?: (outcome: DeliveryOutcome) => void;
  /** How often due deliveries are looked for (1 s). */
  pollMs?: number;
  /** Attempts one endpoint may have in flight on this instance, so a slow one holds few slots. */
  perEndpoint?: number;
  /** Attempts in flight on this instance, all endpoints together (and past it, one for each endpoint that has none). */
  maxInFlight?: number;
}

/**
 * The event sender, a background worker: claims due deliveries, signs and posts each, and settles
 * it on the retry schedule. Nothing here runs on a request's path; a slow endpoint holds at most
 * `perEndpoint` attempts, each bounded by the attempt deadline.
 */
export function createDeliveryWorker({ pool, config, logger, onOutcome, pollMs = 1000, perEndpoint = 4, maxInFlight = 32 }: DeliveryDeps) {
  const schedule = config.webhooks.retrySchedule.map(durationMs);
  const disableAfterMs = durationMs(config.webhooks.disableAfter);
  const sender = createSender({ allowPrivateAddresses: config.webhooks.allowPrivateAddresses });
  const inFlight = new Set<Promise<void>>();
  const busy = new Map<string, number>();
  let timer: NodeJS.Timeout | null = null;
  let stopping = false;
  let ticking: Promise<void> | null = null;

  async function attempt(row: ClaimedRow): Promise<void> {
    const result = await sender.send(row.url, signedHeaders(row.event_id, row.body, row, new Date()), row.body);
    // attempts counts this one: after the first failure the first wait applies.
    const retryMs = result.ok ? null : (schedule[row.attempts - 1] ?? null);
    const outcome: DeliveryOutcome = result.ok ? 'delivered' : retryMs === null ? 'failed' : 'retrying';
    await withTransaction(pool, async (tx) => {
      await settleAttempt(tx, row.endpoint_id, row.event_id, result, retryMs);
      if (!result.ok && (await disableFailing(tx, row.endpoint_id, disableAfterMs))) {
        await insertAuditEntry(tx, {
          type: 'WEBHOOK_UPDATED', actorUserId: null, ownerUserId: null, keyId: null, ip: null, userAgent: null,
          detail: { webhookId: row.endpoint_id, changes: ['enabled'], reason: `every delivery failed for ${config.webhooks.disableAfter}` },
        });
        logger.warn({ webhookId: row.endpoint_id }, 'webhook endpoint disabled: every delivery failed for too long');
      }
    });
    onOutcome?.(outcome);
    logger.debug(
      { webhookId: row.endpoint_id, eventId: row.event_id, outcome, status: result.status, ms: result.durationMs },
      'webhook attempt',
    );
  }

  function launch(row: ClaimedRow): void {
    busy.set(row.endpoint_id, (busy.get(row.endpoint_id) ?? 0) + 1);
    const unrecorded = (err: unknown): void => {
      if (deliveryGone(err)) {
        logger.debug({ webhookId: row.endpoint_id, eventId: row.event_id }, 'webhook attempt ended after its delivery was deleted');
        return;
      }
      logTaskFailure(logger, err, `webhook ${row.endpoint_id}: an attempt could not be recorded; it is tried again when its claim lapses`);
    };
    const p: Promise<void> = attempt(row)
      .catch(unrecorded)
      .finally(() => {
        inFlight.delete(p);
        const n = (busy.get(row.endpoint_id) ?? 1) - 1;
        if (n > 0) busy.set(row.endpoint_id, n);
        else busy.delete(row.endpoint_id);
        // A freed slot may let a waiting delivery go now rather than at the next poll.
        if (!stopping) void tick();
      });
    inFlight.add(p);
  }

  async function claimAndLaunch(): Promise<void> {
    if (stopping) return;
    const free = maxInFlight - inFlight.size;
    // With every slot taken (slow endpoints can hold them all, `perEndpoint` each, for a deadline),
    // an endpoint with nothing in flight here still gets one attempt, beyond the cap: a slow endpoint
    // never holds back another. In flight at most: maxInFlight and one per endpoint.
    const share = free > 0 ? { limit: free, perEndpoint } : { limit: maxInFlight, perEndpoint: 1 };
    // Held past the attempt's deadline and the write that settles it.
    const rows = await claimDue(pool, { ...share, busy, holdMs: ATTEMPT_DEADLINE_MS + 20_000 });
    for (const row of rows) launch(row);
  }

  function tick(): Promise<void> {
    // One claim at a time on this instance; a tick asked for meanwhile is covered by the next poll.
    ticking ??= claimAndLaunch()
      .catch((err: unknown) => logTaskFailure(logger, err, 'due webhook deliveries could not be claimed; tried again shortly'))
      .finally(() => void (ticking = null));
    return ticking;
  }

  function loop(): void {
    timer = setTimeout(() => void tick().finally(() => { if (!stopping) loop(); }), pollMs);
    timer.unref();
  }

  return {
    name: 'event sender',
    start(): void {
      stopping = false;
      loop();
    },
    /** Drains: claims nothing more and lets the attempts in flight finish (each within its deadline). */
    async stop(): Promise<void> {
      stopping = true;
      if (timer) clearTimeout(timer);
      await ticking;
      await Promise.allSettled([...inFlight]);
      await sender.close();
    },
    /** Looks for due deliveries now (after this instance recorded an event, or in a test). */
    poke: (): Promise<void> => tick(),
  };
}
export type DeliveryWorker = ReturnType<typeof createDeliveryWorker>;
