import Router from '@koa/router';
import { z } from 'zod';
import type { RotationService } from '../../services/keys/rotation.ts';
import { DEFAULT_GRACE_SECONDS } from '../../services/keys/rotation.ts';
import type { UsageService } from '../../services/usage.ts';
import { idParam, parseBody, parseQuery } from '../body.ts';
import { queryInt } from '../query-int.ts';
import type { GatewayState } from '../state.ts';
import { requestMeta } from './auth.ts';
import { requireSessionCaller, requireUser } from './callers.ts';

export const rotateBody = z.object({
  gracePeriodSeconds: z.number().int().min(0).max(604_800).default(DEFAULT_GRACE_SECONDS),
}).strict();

export const usageQuery = z.object({
  days: queryInt(1, 90, 30),
}).strict();

export interface KeyLifeRoutesDeps { rotation: RotationService; usage: UsageService }

/** Rotation and usage history of a key (CONTRACT 14); the policy decides who reaches them. */
export function keyLifeRoutes({ rotation, usage }: KeyLifeRoutesDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });

  router.post('/api-keys/:id/rotate', async (ctx) => {
    const caller = requireUser(ctx);
    const id = idParam(ctx.params, 'API key');
    const { gracePeriodSeconds } = await parseBody(ctx, rotateBody);
    const actor = { userId: caller.user.id, activeOrganizationId: caller.kind === 'session' ? caller.session.activeOrganizationId : null };
    const { key, plaintext } = await rotation.rotateKey(actor, id, gracePeriodSeconds, requestMeta(ctx));
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { ...key, key: plaintext };
  });

  router.get('/api-keys/:id/usage', async (ctx) => {
    const caller = requireUser(ctx);
    const id = idParam(ctx.params, 'API key');
    const { days } = parseQuery(ctx, usageQuery);
    ctx.body = await usage.read(caller.user.id, id, days);
  });

  router.get('/admin/api-keys/:id/usage', async (ctx) => {
    requireSessionCaller(ctx);
    const id = idParam(ctx.params, 'API key');
    const { days } = parseQuery(ctx, usageQuery);
    ctx.body = await usage.read(null, id, days);
  });

  return router;
}
