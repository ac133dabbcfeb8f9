import Router from '@koa/router';
import { z } from 'zod';
import type { AccountService } from '../../services/accounts.ts';
import type { KeyService } from '../../services/keys/service.ts';
import type { AuditService } from '../../services/audit.ts';
import { idParam, parseQuery } from '../body.ts';
import { queryInt } from '../query-int.ts';
import type { GatewayState } from '../state.ts';
import { requestMeta } from './auth.ts';
import { requireSessionCaller } from './callers.ts';

export const pageQuery = z.object({
  limit: queryInt(1, 100, 50),
  cursor: z.string().max(200).optional(),
}).strict();

export interface AdminRoutesDeps { keys: KeyService; accounts: AccountService; audit: AuditService }

/** `/admin/*`: the policy lets only admin sessions reach these. */
export function adminRoutes({ keys, accounts, audit }: AdminRoutesDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });

  router.get('/admin/api-keys', async (ctx) => {
    const { limit, cursor } = parseQuery(ctx, pageQuery);
    ctx.body = await keys.adminListKeys({ limit, cursor: cursor ?? null });
  });

  router.delete('/admin/api-keys/:id', async (ctx) => {
    const admin = requireSessionCaller(ctx);
    const id = idParam(ctx.params, 'API key');
    await keys.adminRevokeKey(admin.user.id, id, requestMeta(ctx));
    ctx.status = 204;
  });

  router.get('/admin/audit-log', async (ctx) => {
    const { limit, cursor } = parseQuery(ctx, pageQuery);
    ctx.body = await audit.list({ limit, cursor: cursor ?? null });
  });

  router.post('/admin/users/:id/ban', async (ctx) => {
    await accounts.setBanned(idParam(ctx.params, 'user'), true);
    ctx.status = 204;
  });
  router.post('/admin/users/:id/unban', async (ctx) => {
    await accounts.setBanned(idParam(ctx.params, 'user'), false);
    ctx.status = 204;
  });

  return router;
}
