import Router from '@koa/router';
import { z } from 'zod';
import type { RotationService } from '../../services/keys/rotation.ts';
import { DEFAULT_GRACE_SECONDS } from '../../services/keys/rotation.ts';
import type { UsageService } from '../../services/usage.ts';
import { idParam, parseBody, parseQuery } from '../body.ts';
import { queryInt } from '../query-int.ts';
import type { GatewayState } from '../state.ts';
import { KEY_ROUTE, serve, type Operation } from '../operation.ts';
import * as s from '../openapi-schemas.ts';
import type { KeyVariant } from '../../config.ts';
import { requestMeta } from './auth.ts';
import { requireUser } from './callers.ts';

export const rotateBody = z.object({
  gracePeriodSeconds: z.number().int().min(0).max(604_800).default(DEFAULT_GRACE_SECONDS),
}).strict();

export const usageQuery = z.object({
  days: queryInt(1, 90, 30),
}).strict();

export interface KeyLifeRoutesDeps { rotation: RotationService; usage: UsageService; variant: KeyVariant }

/** Under Variant A only a session may rotate, as only a session may create. */
export function keyLifeOperations(variant: KeyVariant) {
  return {
    rotate: {
      method: 'post', path: '/api-keys/:id/rotate', tag: 'keys',
      summary: 'Issue a successor; the old key works until the grace period ends',
      body: rotateBody, ok: { status: 201, schema: s.createdApiKey }, problems: [...KEY_ROUTE, 'API_KEY_DAILY_LIMIT'],
      security: variant === 'A' ? 'session' : 'caller',
    },
    usage: {
      method: 'get', path: '/api-keys/:id/usage', tag: 'keys', summary: 'Daily requests and refusals of an own key, oldest first',
      query: usageQuery, ok: { status: 200, schema: s.usage }, problems: KEY_ROUTE,
    },
  } satisfies Record<string, Operation>;
}

/** Rotation and usage history of a key; the policy decides who reaches them. */
export function keyLifeRoutes({ rotation, usage, variant }: KeyLifeRoutesDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });

  const ops = keyLifeOperations(variant);
  serve(router, ops.rotate, async (ctx) => {
    const caller = requireUser(ctx);
    const id = idParam(ctx.params, 'API key');
    const { gracePeriodSeconds } = await parseBody(ctx, rotateBody);
    const actor = { userId: caller.user.id, activeOrganizationId: caller.kind === 'session' ? caller.session.activeOrganizationId : null };
    const { key, plaintext } = await rotation.rotateKey(actor, id, gracePeriodSeconds, requestMeta(ctx));
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { ...key, key: plaintext };
  });

  serve(router, ops.usage, async (ctx) => {
    const caller = requireUser(ctx);
    const id = idParam(ctx.params, 'API key');
    const { days } = parseQuery(ctx, usageQuery);
    ctx.body = await usage.read(caller.user.id, id, days);
  });

  return router;
}
