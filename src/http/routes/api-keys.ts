import Router from '@koa/router';
import { z } from 'zod';
import type { KeyService } from '../../services/keys/service.ts';
import { idParam, parseBody, parseQuery } from '../body.ts';
import type { GatewayContext, GatewayState } from '../state.ts';
import { KEY_ROUTE, serve, type Operation } from '../operation.ts';
import * as s from '../openapi-schemas.ts';
import type { KeyVariant } from '../../config.ts';
import { requestMeta, wellFormed } from './auth.ts';
import { requireUser } from './callers.ts';

export const name = z.string().trim()
  .min(1, 'must not be empty')
  .max(64, 'at most 64 characters')
  .regex(/^[^\u0000-\u001f\u007f]*$/, 'must not contain control characters')
  .refine(wellFormed, 'must be well-formed Unicode');
// Only the shape is checked here; which scopes and actions exist is the policy's scopes file, read
// by the key service at the time of the create.
const permissions = z.record(z.string().max(64), z.array(z.string().max(64)).max(32))
  .refine((p) => Object.keys(p).length <= 64, 'at most 64 scopes');
// Every instant keygate answers is RFC 3339 with a four-digit year, so one it accepts must fit:
// "9999-12-31T23:59:59-23:59" is year 10000 in UTC, and "0000-01-01T00:00:00+00:01" year -1.
const LAST_INSTANT = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
const instant = z.iso.datetime({ offset: true })
  .refine((t) => new Date(t).getTime() <= LAST_INSTANT, 'must be at most 9999-12-31T23:59:59Z')
  .refine((t) => new Date(t).getUTCFullYear() >= 0, 'must be at least 0000-01-01T00:00:00Z');
// Expiry at creation: seconds from now, or an instant; "not both" and the bounds that
// depend on the clock and maxLifetimeDays are the service's (services/keys/expiry.ts).
const expiry = {
  expiresIn: z.number().int()
    .min(3600, 'must be at least 3600 seconds')
    .max(31_536_000, 'must be at most 31536000 seconds (a year)')
    .optional(),
  expiresAt: instant.optional(),
};
export const createBodyA = z.object({
  name, ai: z.boolean().optional(), mcp: z.boolean().optional(), permissions: permissions.optional(), ...expiry,
}).strict();
export const createBodyB = z.object({ name, ...expiry }).strict();

// The auth layer's own key endpoints take the id in the body or query, better-auth style.
export const updateBody = z.object({
  keyId: z.uuid(),
  name: name.optional(),
  enabled: z.boolean().optional(),
  expiresAt: instant.nullable().optional(),
}).strict();
export const deleteBody = z.object({ keyId: z.uuid() }).strict();
export const getQuery = z.object({ id: z.uuid() }).strict();

export interface ApiKeyRoutesDeps { keys: KeyService; variant: KeyVariant }

/** The create body takes scopes under Variant A only; there, only a session may create or revoke. */
export function apiKeyOperations(variant: KeyVariant) {
  const createBody = variant === 'A' ? createBodyA : createBodyB;
  const sessionOnlyA = variant === 'A' ? 'session' : 'caller';
  return {
    list: {
      method: 'get', path: '/api-keys', tag: 'keys',
      summary: 'Own keys, newest first; revoked and retired keys left out', ok: { status: 200, schema: s.keyList }, problems: KEY_ROUTE,
    },
    create: {
      method: 'post', path: '/api-keys', tag: 'keys',
      summary: 'Create a key; the plaintext is in the answer once', body: createBody, ok: { status: 201, schema: s.createdApiKey },
      problems: [...KEY_ROUTE, 'FEATURE_DISABLED', 'API_KEY_LIMIT', 'API_KEY_DAILY_LIMIT'], security: sessionOnlyA,
    },
    revoke: {
      method: 'delete', path: '/api-keys/:id', tag: 'keys',
      summary: 'Revoke an own key', ok: { status: 204, schema: null }, problems: KEY_ROUTE, security: sessionOnlyA,
    },
    authCreate: {
      method: 'post', path: '/auth/api-key/create', tag: 'auth',
      summary: 'Create a key (Variant B only; Variant A answers 403)', body: createBody, ok: { status: 201, schema: s.createdApiKey },
      problems: [...KEY_ROUTE, 'FEATURE_DISABLED'],
    },
    authUpdate: {
      method: 'post', path: '/auth/api-key/update', tag: 'auth',
      summary: 'Rename, disable or set the expiry of an own key', body: updateBody, ok: { status: 200, schema: s.apiKey },
      problems: KEY_ROUTE, security: 'session',
    },
    authDelete: {
      method: 'post', path: '/auth/api-key/delete', tag: 'auth',
      summary: 'Revoke an own key (Variant B only)', body: deleteBody, ok: { status: 204, schema: null }, problems: KEY_ROUTE,
    },
    authGet: {
      method: 'get', path: '/auth/api-key/get', tag: 'auth',
      summary: 'One own key', query: getQuery, ok: { status: 200, schema: s.apiKey }, problems: KEY_ROUTE,
    },
    authList: {
      method: 'get', path: '/auth/api-key/list', tag: 'auth',
      summary: 'Own keys', ok: { status: 200, schema: s.keyList }, problems: KEY_ROUTE,
    },
  } satisfies Record<string, Operation>;
}

const actorOf = (ctx: GatewayContext) => {
  const c = requireUser(ctx);
  return { userId: c.user.id, activeOrganizationId: c.kind === 'session' ? c.session.activeOrganizationId : null };
};

/** `/api-keys` (the product's routes) and `/auth/api-key/*` (the auth layer's). */
export function apiKeyRoutes({ keys, variant }: ApiKeyRoutesDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  const ops = apiKeyOperations(variant);

  const create = async (ctx: GatewayContext) => {
    const body = await parseBody(ctx, ops.create.body);
    const { key, plaintext } = await keys.createKey(actorOf(ctx), body, requestMeta(ctx));
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { ...key, key: plaintext };
  };

  serve(router, ops.list, async (ctx) => {
    ctx.body = { keys: await keys.listKeys(requireUser(ctx).user.id) };
  });
  serve(router, ops.create, create);
  serve(router, ops.revoke, async (ctx) => {
    const id = idParam(ctx.params, 'API key');
    await keys.revokeKey(requireUser(ctx).user.id, id, requestMeta(ctx));
    ctx.status = 204;
  });

  serve(router, ops.authCreate, create);
  serve(router, ops.authUpdate, async (ctx) => {
    const { keyId, expiresAt, ...rest } = await parseBody(ctx, updateBody);
    const patch = { ...rest, ...(expiresAt !== undefined ? { expiresAt: expiresAt === null ? null : new Date(expiresAt) } : {}) };
    ctx.body = await keys.updateKey(requireUser(ctx).user.id, keyId, patch, requestMeta(ctx));
  });
  serve(router, ops.authDelete, async (ctx) => {
    const { keyId } = await parseBody(ctx, deleteBody);
    await keys.revokeKey(requireUser(ctx).user.id, keyId, requestMeta(ctx));
    ctx.status = 204;
  });
  serve(router, ops.authGet, async (ctx) => {
    const { id } = parseQuery(ctx, getQuery);
    ctx.body = await keys.getKey(requireUser(ctx).user.id, id);
  });
  serve(router, ops.authList, async (ctx) => {
    ctx.body = { keys: await keys.listKeys(requireUser(ctx).user.id) };
  });

  return router;
}
