import type { Surface } from '../config.ts';
import { AppError } from '../errors.ts';
import type { GatewayContext } from './state.ts';

// The one gate for features that are off. What each closes is listed here once; a request there is
// refused before any caller is resolved or any quota spent, the same to every caller. The routers
// alone cannot: they run after the policy, which answers an anonymous caller 401 first.

type Gated = 'apiKeys' | 'mcp';

/** How a request to a feature that is off is answered. */
export function featureOff(feature: Gated): AppError {
  return feature === 'apiKeys'
    ? new AppError('API_KEYS_DISABLED', 'API keys are turned off on this server.')
    // 404, as for a route that does not exist: a server without MCP has no such endpoint.
    : new AppError('NOT_FOUND', 'The MCP server is turned off on this server.');
}

/** What each feature serves, beneath which everything is closed while it is off. */
function closures(surface: Surface): { feature: Gated; paths: string[] }[] {
  const api = surface.paths.api;
  return [
    { feature: 'apiKeys', paths: [`${api}/api-keys`, `${api}/admin/api-keys`, `${api}/auth/api-key`] },
    { feature: 'mcp', paths: [surface.paths.mcp] },
  ];
}

const within = (path: string, base: string) => path === base || path.startsWith(base + '/');

/** The refusal for `path` while the feature that serves it is off; null while it is open. */
export function gate(surface: Surface): (path: string) => AppError | null {
  const closed = closures(surface).filter((c) => !surface.features[c.feature]);
  return (path) => {
    const hit = closed.find((c) => c.paths.some((p) => within(path, p)));
    return hit ? featureOff(hit.feature) : null;
  };
}

/** The gate as the pipeline's step (app.ts): every caller alike, before anyone is resolved. */
export function featureGate(surface: Surface) {
  const refusalFor = gate(surface);
  return function featureGateScreen(ctx: GatewayContext): void {
    const refused = refusalFor(ctx.path);
    if (refused) throw refused;
  };
}
