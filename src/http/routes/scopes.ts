import Router from '@koa/router';
import type { Config, Surface } from '../../config.ts';
import type { PolicyHolder } from '../../policy/engine.ts';
import { featureOn, type ScopeCatalog } from '../../policy/scopes.ts';
import type { GatewayState } from '../state.ts';
import { serve, type Operation } from '../operation.ts';
import * as s from '../openapi-schemas.ts';

export const scopeOperations = {
  list: {
    method: 'get', path: '/scopes', tag: 'keys', summary: 'The scopes a key may be given, in file order (empty under Variant B)',
    ok: { status: 200, schema: s.scopeList },
  },
} satisfies Record<string, Operation>;

export interface ScopeRoutesDeps { policy: PolicyHolder; config: Pick<Config, 'surface'> }

/**
 * The scopes a create form may offer, each marked available while its feature is on. Variant B
 * keys are full sessions with no scopes, and with keys off nothing is created: both offer none.
 */
export function offeredScopes(surface: Surface, catalog: Pick<ScopeCatalog, 'list'>) {
  const offers = surface.features.apiKeys && surface.variant === 'A';
  return (offers ? catalog.list : []).map((s) => ({
    name: s.name, label: s.label, description: s.description, actions: [...s.actions], available: featureOn(s, surface.features),
  }));
}

/** `GET /scopes`: what a key may be given, for clients and the page. */
export function scopeRoutes({ policy, config }: ScopeRoutesDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  serve(router, scopeOperations.list, (ctx) => {
    // Read per request: a policy apply swaps the scopes in with the policy.
    ctx.body = { scopes: offeredScopes(config.surface, policy.current.scopes) };
  });
  return router;
}
