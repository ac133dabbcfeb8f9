import Router from '@koa/router';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import type { GatewayState } from '../state.ts';
import { serve, type Operation } from '../operation.ts';
import * as s from '../openapi-schemas.ts';

export interface Probe { name: string; check(): Promise<void> }

/** Served outside the API prefix, at the root. */
export const healthOperations = {
  live: { method: 'get', path: '/healthz', tag: 'meta', summary: 'Liveness', ok: { status: 200, schema: s.health }, security: 'public' },
  ready: {
    method: 'get', path: '/readyz', tag: 'meta', summary: 'Readiness of PostgreSQL and, when configured, Redis (503 when not ready)',
    ok: { status: 200, schema: s.readiness },
    also: { status: 503, schema: s.readiness, description: 'Not ready: the checks say which store does not answer' },
    security: 'public',
  },
  metrics: {
    method: 'get', path: '/metrics', tag: 'meta', summary: 'Prometheus metrics',
    ok: { status: 200, schema: z.string(), contentType: 'text/plain' }, security: 'public',
  },
} satisfies Record<string, Operation>;

/** Liveness answers while the process runs; readiness asks PostgreSQL and, when configured, Redis. */
export function healthRoutes({ probes, registry, readiness }: {
  probes: Probe[];
  registry: Registry;
  readiness?: () => Record<string, unknown>;
}): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  serve(router, healthOperations.live, (ctx) => {
    ctx.body = { status: 'ok' };
  });
  serve(router, healthOperations.ready, async (ctx) => {
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
  serve(router, healthOperations.metrics, async (ctx) => {
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  return router;
}
