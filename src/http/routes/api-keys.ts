import Router from '@koa/router';
import { z } from 'zod';
import type { KeyService } from '../../services/keys/service.ts';
import { idParam, parseBody, parseQuery } from '../body.ts';
import type { GatewayContext, GatewayState } from '../state.ts';
import { requestMeta } from './auth.ts';
import { requireUser } from './callers.ts';

export const name = z.string().trim().min(1, 'must not be empty').max(64, 'at most 64 characters').regex(/^[^\u0000-\u001f\u007f]*$/, 'must not contain control characters');
// Only the shape is checked here; which scopes and actions exist is the policy's scopes file, read
// by the key service at the time of the create (CONTRACT 12).
const permissions = z.record(z.string().max(64), z.array(z.string().max(64)).max(32)).refine((p) => Object.keys(p).length <= 64, 'at most 64 scopes');
// Expiry at creation (CONTRACT 14): seconds from now, or an instant; "not both" and the bounds that
// depend on the clock and maxLifetimeDays are the service's (services/keys/expiry.ts).
const expiry = {
  expiresIn: z.number().int().min(3600, 'must be at least 3600 seconds').max(31_536_000, 'must be at most 31536000 seconds (a year)').optional(),
  expiresAt: z.iso.datetime({ offset: true }).optional(),
};
export const createBodyA = z.object({ name, ai: z.boolean().optional(), mcp: z.boolean().optional(), permissions: permissions.optional(), ...expiry }).strict();
export const createBodyB = z.object({ name, ...expiry }).strict();

// The auth layer's own key endpoints take the id in the body or query, better-auth style.
export const updateBody = z.object({
  keyId: z.uuid(),
  name: name.optional(),
  enabled: z.boolean().optional(),
  expiresAt: z.iso.datetime({ offset: true }).nullable().optional(),
}).strict();
export const deleteBody = z.object({ keyId: z.uuid() }).strict();
export const getQuery = z.object({ id: z.uuid() }).strict();

export interface ApiKeyRoutesDeps { keys: KeyService; variant: 'A' | 'B' }

const actorOf = (ctx: GatewayContext) => {
  const c = requireUser(ctx);
  return { userId: c.user.id, activeOrganizationId: c.kind === 'session' ? c.session.activeOrganizationId : null };
};

/** `/api-keys` (the product's routes) and `/auth/api-key/*` (the auth layer's). */
export function apiKeyRoutes({ keys, variant }: ApiKeyRoutesDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  const createBody = variant === 'A' ? createBodyA : createBodyB;

  const create = async (ctx: GatewayContext) => {
    const body = await parseBody(ctx, createBody);
    const { key, plaintext } = await keys.createKey(actorOf(ctx), body, requestMeta(ctx));
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { ...key, key: plaintext };
  };

  router.get('/api-keys', async (ctx) => {
    ctx.body = { keys: await keys.listKeys(requireUser(ctx).user.id) };
  });
  router.post('/api-keys', create);
  router.delete('/api-keys/:id', async (ctx) => {
    const id = idParam(ctx.params, 'API key');
    await keys.revokeKey(requireUser(ctx).user.id, id, requestMeta(ctx));
    ctx.status = 204;
  });

  router.post('/auth/api-key/create', create);
  router.post('/auth/api-key/update', async (ctx) => {
    const { keyId, expiresAt, ...rest } = await parseBody(ctx, updateBody);
    const patch = { ...rest, ...(expiresAt !== undefined ? { expiresAt: expiresAt === null ? null : new Date(expiresAt) } : {}) };
    ctx.body = await keys.updateKey(requireUser(ctx).user.id, keyId, patch);
  });
  router.post('/auth/api-key/delete', async (ctx) => {
    const { keyId } = await parseBody(ctx, deleteBody);
    await keys.revokeKey(requireUser(ctx).user.id, keyId, requestMeta(ctx));
    ctx.status = 204;
  });
  router.get('/auth/api-key/get', async (ctx) => {
    const { id } = parseQuery(ctx, getQuery);
    ctx.body = await keys.getKey(requireUser(ctx).user.id, id);
  });
  router.get('/auth/api-key/list', async (ctx) => {
    ctx.body = { keys: await keys.listKeys(requireUser(ctx).user.id) };
  });

  return router;
}
