import type { Server } from 'node:http';
import type { Logger } from 'pino';
import type { ServedRoute } from '../app.ts';
import type { Clock, Every } from '../services/clock.ts';
import type { DeliveryWorker } from '../services/events/delivery.ts';
import type { DecisionObserver, Heartbeat, PolicyService } from '../services/policy/index.ts';
import type { LeaseOptions, QuotaSpender } from '../services/quota/lease.ts';
import type { CloseHooks } from '../shutdown.ts';
import type { Pool } from '../store/db.ts';

// What startGateway (src/main.ts) takes besides the config, and what it hands back.

export interface GatewayOptions {
  clock?: Clock;
  /** Runs the periodic work (the last-use writer); a test hands in one it drives itself. */
  every?: Every;
  logger?: Logger;
  /** Where the embedded PostgreSQL keeps its data when DATABASE_URL is unset. */
  embeddedDataDir?: string;
  /** How often the instance records its loaded policy and adds its shadow counts (default 5 s). */
  heartbeatMs?: number;
  /** How long a body may send nothing before 408 (default 10 s); tests shorten it. */
  bodyIdleMs?: number;
  /** How long a request's headers may take to arrive whole (default 10 s); tests shorten it. */
  headersTimeoutMs?: number;
  /** How often the signal channel is checked, and how long the check may take (tests shorten them). */
  signalCheck?: { intervalMs: number; timeoutMs: number };
  /** How usage tallies are flushed (default every 5 s); a test hands in its own ticker. */
  usageFlush?: { intervalMs?: number; every?: Every };
  /** Leased quota blocks: sizes and timings; tests set sweepIntervalMs 0 and sweep by hand. */
  quotaLease?: Pick<LeaseOptions, 'floor' | 'blockSize' | 'blockTtlMs' | 'sweepIntervalMs'>;
  /** How often the event sender looks for due deliveries (default 1 s). */
  webhookPollMs?: number;
  /** A certificate authority trusted for client metadata documents (tests serve them over https with their own). */
  clientMetadataCa?: string;
}

export interface Gateway {
  server: Server;
  /** The routes served by the gateway itself (the rest under the prefix is forwarded). */
  routes: ServedRoute[];
  url: string;
  pool: Pool;
  /** The policy in force, its heartbeat and its decision counts; tests drive them directly. */
  policy: { service: PolicyService; heartbeat: Heartbeat; observer: DecisionObserver };
  /** Buffered writers register their flush here; it runs after the last request, before the pools close. */
  closeHooks: CloseHooks;
  /**
   * Stops well: refuse new connections, `/readyz` 503, let requests in flight finish
   * for up to `graceMs`, run the close hooks, close the signal channel and the pools.
   */
  shutdown(graceMs?: number): Promise<{ cutOff: number }>;
  /** The instance's quota spender, whose blocks a test may hand back at once with sweep(). */
  quota: QuotaSpender;
  /** The event sender; a test may have it look for due deliveries at once. */
  events: DeliveryWorker;
  /** A shutdown without grace: what is in flight is cut at once (tests). */
  close(): Promise<void>;
}
