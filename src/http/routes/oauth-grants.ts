import Router from '@koa/router';
import type { GrantService } from '../../services/oauth-grants.ts';
import type { GatewayState } from '../state.ts';
import { requestMeta } from './auth.ts';
import { requireSessionCaller } from './callers.ts';

export interface OAuthGrantRoutesDeps { grants: GrantService }

/** Connected apps (CONTRACT 15): the MCP clients a person has let act as them, session only. */
export function oauthGrantRoutes({ grants }: OAuthGrantRoutesDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });

  router.get('/oauth/grants', async (ctx) => {
    const caller = requireSessionCaller(ctx);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { grants: await grants.listGrants(caller.user.id) };
  });

  router.delete('/oauth/grants/:id', async (ctx) => {
    const caller = requireSessionCaller(ctx);
    await grants.revokeGrant(caller.user.id, ctx.params.id ?? '', requestMeta(ctx));
    ctx.status = 204;
  });
  return router;
}
