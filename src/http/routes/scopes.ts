import Router from '@koa/router';
import type { Config } from '../../config.ts';
import type { PolicyHolder } from '../../policy/engine.ts';
import { featureOn } from '../../policy/scopes.ts';
import type { GatewayState } from '../state.ts';

export interface ScopeRoutesDeps { policy: PolicyHolder; config: Pick<Config, 'apiKeys' | 'ai' | 'mcpServer'> }

/** `GET /scopes`: what a key may be given, for clients and the page (CONTRACT 12). */
export function scopeRoutes({ policy, config }: ScopeRoutesDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  // Variant B keys are full sessions with no scopes, so nothing is offered there.
  const offersScopes = config.apiKeys.enabled && config.apiKeys.variant === 'A';
  const features = { ai: config.ai.enabled, mcpServer: config.mcpServer.enabled };
  router.get('/scopes', (ctx) => {
    // Read per request: a policy apply swaps the scopes in with the policy.
    const list = offersScopes ? policy.current.scopes.list : [];
    ctx.body = {
      scopes: list.map((s) => ({ name: s.name, label: s.label, description: s.description, actions: [...s.actions], available: featureOn(s, features) })),
    };
  });
  return router;
}
