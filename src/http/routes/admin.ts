import Router from '@koa/router';
import { z } from 'zod';
import type { AccountService } from '../../services/accounts.ts';
import type { KeyService } from '../../services/keys/service.ts';
import type { AuditService } from '../../services/audit.ts';
import { idParam, parseQuery } from '../body.ts';
import { queryInt } from '../query-int.ts';
import type { GatewayState } from '../state.ts';
import { KEY_ROUTE, serve, type Operation } from '../operation.ts';
import * as s from '../openapi-schemas.ts';
import { requestMeta } from './auth.ts';
import { requireSessionCaller } from './callers.ts';
import { auditFilterOf, auditListQuery, requireAdmin } from './console.ts';

export const pageQuery = z.object({
  limit: queryInt(1, 100, 50),
  cursor: z.string().max(200).optional(),
}).strict();

export const adminOperations = {
  listKeys: { method: 'get', path: '/admin/api-keys', tag: 'admin', summary: "Every user's keys, paginated", query: pageQuery, ok: { status: 200, schema: s.adminKeyList }, problems: KEY_ROUTE, security: 'admin' },
  revokeKey: { method: 'delete', path: '/admin/api-keys/:id', tag: 'admin', summary: 'Revoke any key', ok: { status: 204, schema: null }, problems: KEY_ROUTE, security: 'admin' },
  auditLog: { method: 'get', path: '/admin/audit-log', tag: 'admin', summary: 'The audit trail, newest first, filtered by kind, actor, owner and days', query: auditListQuery, ok: { status: 200, schema: s.auditLog }, security: 'admin' },
  ban: { method: 'post', path: '/admin/users/:id/ban', tag: 'admin', summary: 'Ban a user: their sessions and keys stop at once', ok: { status: 204, schema: null }, problems: ['NOT_FOUND'], security: 'admin' },
  unban: { method: 'post', path: '/admin/users/:id/unban', tag: 'admin', summary: 'Lift a ban', ok: { status: 204, schema: null }, problems: ['NOT_FOUND'], security: 'admin' },
} satisfies Record<string, Operation>;

export interface AdminRoutesDeps { keys: KeyService; accounts: AccountService; audit: AuditService }

/** `/admin/*`: the policy lets only admin sessions reach these. */
export function adminRoutes({ keys, accounts, audit }: AdminRoutesDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });

  const ops = adminOperations;
  serve(router, ops.listKeys, async (ctx) => {
    const { limit, cursor } = parseQuery(ctx, pageQuery);
    ctx.body = await keys.adminListKeys({ limit, cursor: cursor ?? null });
  });

  serve(router, ops.revokeKey, async (ctx) => {
    const admin = requireSessionCaller(ctx);
    const id = idParam(ctx.params, 'API key');
    await keys.adminRevokeKey(admin.user.id, id, requestMeta(ctx));
    ctx.status = 204;
  });

  serve(router, ops.auditLog, async (ctx) => {
    const q = parseQuery(ctx, auditListQuery);
    ctx.body = await audit.list({ limit: q.limit, cursor: q.cursor ?? null, filter: auditFilterOf(q) });
  });

  for (const [op, banned] of [[ops.ban, true], [ops.unban, false]] as const) {
    serve(router, op, async (ctx) => {
      const admin = requireAdmin(ctx);
      await accounts.setBanned({ id: idParam(ctx.params, 'user') }, banned, { userId: admin.user.id }, requestMeta(ctx));
      ctx.status = 204;
    });
  }

  return router;
}
