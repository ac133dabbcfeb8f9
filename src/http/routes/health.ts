import Router from '@koa/router';
import type { Registry } from 'prom-client';
import type { GatewayState } from '../state.ts';

export interface Probe { name: string; check(): Promise<void> }

/** Liveness answers while the process runs; readiness asks PostgreSQL and, when configured, Redis. */
export function healthRoutes({ probes, registry, readiness }: { probes: Probe[]; registry: Registry; readiness?: () => Record<string, unknown> }): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    const results = await Promise.all(
      probes.map(async (p) => {
        try {
          await Promise.race([p.check(), new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 2000).unref())]);
          return [p.name, 'ok'] as const;
        } catch {
          return [p.name, 'unavailable'] as const;
        }
      }),
    );
    const ready = results.every(([, s]) => s === 'ok');
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'ready' : 'unavailable', checks: Object.fromEntries(results), ...readiness?.() };
  });
  router.get('/metrics', async (ctx) => {
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  return router;
}
