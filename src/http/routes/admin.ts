import Router from '@koa/router';
import { z } from 'zod';
import type { AccountService } from '../../services/accounts.ts';
import { KEY_FILTER_STATES, type KeyFilter, type KeyService } from '../../services/keys/service.ts';
import type { AuditService } from '../../services/audit.ts';
import { idParam, parseBody, parseQuery } from '../body.ts';
import { queryInt } from '../query-int.ts';
import type { GatewayState } from '../state.ts';
import { KEY_ROUTE, serve, type Operation } from '../operation.ts';
import * as s from '../openapi-schemas.ts';
import { requestMeta } from './auth.ts';
import { NAME } from '../../policy/scopes.ts';
import type { UsageService } from '../../services/usage.ts';
import { requireAdmin, theAdmin } from '../admin-only.ts';
import { auditFilterOf, auditListQuery, storableText } from './console.ts';
import { usageQuery } from './key-life.ts';

export const pageQuery = z.object({
  limit: queryInt(1, 100, 50),
  cursor: z.string().max(200).optional(),
}).strict();

/** The keys list's filters; the console page reads the same ones. */
// A GET form sends an untouched field as `name=`: empty means no filter, as absent does.
const blankIsAbsent = <S extends z.ZodType>(schema: S) =>
  z.preprocess((v) => (v === '' ? undefined : v), schema.optional());
// The pages show a key's start followed by an ellipsis (`key_AbCdEfGh…`): copied as shown, it still finds the key.
const withoutEllipsis = (v: unknown) => (typeof v === 'string' ? v.trim().replace(/(?:\u2026|\.\.\.)$/, '') : v);
export const keyFilterQuery = pageQuery.extend({
  owner: blankIsAbsent(storableText(254)).describe("The owner's e-mail, exactly (any case)"),
  state: blankIsAbsent(z.enum(KEY_FILTER_STATES)).describe('Absent: every key not revoked; `revoked` lists only revoked keys'),
  scope: blankIsAbsent(z.string().regex(NAME, 'a scope name')).describe('Keys whose permissions name this scope'),
  q: blankIsAbsent(z.preprocess(withoutEllipsis, z.string().trim().min(4).max(64)
    .regex(/^[A-Za-z0-9_-]+$/, 'the start of a key as shown, or of its id')))
    .describe('Keys whose start (the prefix as shown) or id begins with this: what a secret-scanning alert gives'),
}).strict();

/** What an admin may change of anyone's key; the owner's rules for the expiry apply. */
export const adminKeyPatch = z.object({
  enabled: z.boolean().optional(),
  expiresAt: z.iso.datetime({ offset: true }).nullable().optional().describe('null: never expires'),
}).strict().refine((b) => b.enabled !== undefined || b.expiresAt !== undefined, 'name enabled, expiresAt or both');

export const keyFilterOf = (q: { owner?: string; state?: KeyFilter['state']; scope?: string; q?: string }): KeyFilter =>
  ({ ownerEmail: q.owner || undefined, state: q.state, scope: q.scope, q: q.q || undefined });

export const adminOperations = {
  listKeys: {
    method: 'get', path: '/admin/api-keys', tag: 'admin', summary: "Every user's keys, paginated, filtered by owner, state and scope",
    query: keyFilterQuery, ok: { status: 200, schema: s.adminKeyList }, problems: KEY_ROUTE, security: 'admin',
  },
  updateKey: {
    method: 'patch', path: '/admin/api-keys/:id', tag: 'admin',
    summary: "Disable, enable or set the expiry of anyone's key (audited API_KEY_UPDATED, the admin as actor)",
    body: adminKeyPatch, ok: { status: 200, schema: s.apiKey }, problems: [...KEY_ROUTE, 'VALIDATION_FAILED'], security: 'admin',
  },
  revokeKey: {
    method: 'delete', path: '/admin/api-keys/:id', tag: 'admin', summary: 'Revoke any key', ok: { status: 204, schema: null },
    problems: KEY_ROUTE, security: 'admin',
  },
  auditLog: {
    method: 'get', path: '/admin/audit-log', tag: 'admin',
    summary: 'The audit trail, newest first, filtered by kind, actor, owner and days', query: auditListQuery,
    ok: { status: 200, schema: s.auditLog }, security: 'admin',
  },
  usage: {
    method: 'get', path: '/admin/api-keys/:id/usage', tag: 'admin', summary: "Daily requests and refusals of any user's key",
    query: usageQuery, ok: { status: 200, schema: s.usage }, problems: KEY_ROUTE, security: 'admin',
  },
  ban: {
    method: 'post', path: '/admin/users/:id/ban', tag: 'admin', summary: 'Ban a user: their sessions and keys stop at once',
    ok: { status: 204, schema: null }, problems: ['NOT_FOUND'], security: 'admin',
  },
  unban: {
    method: 'post', path: '/admin/users/:id/unban', tag: 'admin', summary: 'Lift a ban', ok: { status: 204, schema: null },
    problems: ['NOT_FOUND'], security: 'admin',
  },
} satisfies Record<string, Operation>;

export interface AdminRoutesDeps { keys: KeyService; accounts: AccountService; audit: AuditService; usage: UsageService }

/** `/admin/*`: admin sessions only, by the router's one rule (and by the policy). */
export function adminRoutes({ keys, accounts, audit, usage }: AdminRoutesDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  router.use(requireAdmin);

  const ops = adminOperations;
  serve(router, ops.listKeys, async (ctx) => {
    const q = parseQuery(ctx, keyFilterQuery);
    ctx.body = await keys.adminListKeys({ limit: q.limit, cursor: q.cursor ?? null, filter: keyFilterOf(q) });
  });

  serve(router, ops.updateKey, async (ctx) => {
    const admin = theAdmin(ctx);
    const id = idParam(ctx.params, 'API key');
    const { enabled, expiresAt } = await parseBody(ctx, adminKeyPatch);
    const input = { enabled, expiresAt: expiresAt === undefined ? undefined : expiresAt === null ? null : new Date(expiresAt) };
    ctx.body = await keys.adminUpdateKey(admin.id, id, input, requestMeta(ctx));
  });

  serve(router, ops.revokeKey, async (ctx) => {
    const id = idParam(ctx.params, 'API key');
    await keys.adminRevokeKey(theAdmin(ctx).id, id, requestMeta(ctx));
    ctx.status = 204;
  });

  serve(router, ops.auditLog, async (ctx) => {
    const q = parseQuery(ctx, auditListQuery);
    ctx.body = await audit.list({ limit: q.limit, cursor: q.cursor ?? null, filter: auditFilterOf(q) });
  });

  serve(router, ops.usage, async (ctx) => {
    const id = idParam(ctx.params, 'API key');
    const { days } = parseQuery(ctx, usageQuery);
    ctx.body = await usage.read(null, id, days);
  });

  for (const [op, banned] of [[ops.ban, true], [ops.unban, false]] as const) {
    serve(router, op, async (ctx) => {
      await accounts.setBanned({ id: idParam(ctx.params, 'user') }, banned, { userId: theAdmin(ctx).id }, requestMeta(ctx));
      ctx.status = 204;
    });
  }

  return router;
}
