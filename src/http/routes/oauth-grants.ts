import Router from '@koa/router';
import type { GrantService } from '../../services/oauth-grants.ts';
import type { GatewayState } from '../state.ts';
import { serve, type Operation } from '../operation.ts';
import * as s from '../openapi-schemas.ts';
import { requestMeta } from './auth.ts';
import { requireSessionCaller } from './callers.ts';

export interface OAuthGrantRoutesDeps { grants: GrantService }

export const oauthGrantOperations = {
  list: {
    method: 'get', path: '/oauth/grants', tag: 'oauth', summary: 'Connected apps: the MCP clients allowed to act as the caller',
    ok: { status: 200, schema: s.grantList }, security: 'session',
  },
  revoke: {
    method: 'delete', path: '/oauth/grants/:id', tag: 'oauth', summary: 'Revoke a connected app and every token of its grant',
    ok: { status: 204, schema: null }, problems: ['NOT_FOUND'], security: 'session',
  },
} satisfies Record<string, Operation>;

/** Connected apps: the MCP clients a person has let act as them, session only. */
export function oauthGrantRoutes({ grants }: OAuthGrantRoutesDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });

  serve(router, oauthGrantOperations.list, async (ctx) => {
    const caller = requireSessionCaller(ctx);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { grants: await grants.listGrants(caller.user.id) };
  });

  serve(router, oauthGrantOperations.revoke, async (ctx) => {
    const caller = requireSessionCaller(ctx);
    await grants.revokeGrant(caller.user.id, ctx.params.id ?? '', requestMeta(ctx));
    ctx.status = 204;
  });
  return router;
}
