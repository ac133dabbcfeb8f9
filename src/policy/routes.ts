import { servedRouteTable } from './served-routes.ts';

// The routes the gateway serves itself, as the policy sees them (default prefix /api). The policy
// CLI checks every one is decided by a policy line for each subject kind. The table is written from
// what createApp serves (src/http/route-table.ts), not by hand, and a test keeps the two equal.

export interface GatewayRoute {
  /** 'ALL' for a route that answers every method (the MCP endpoint). */
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'ALL';
  /** `:name` is one segment; a trailing `*` is anything beneath (one or more segments). */
  path: string;
}

export const gatewayRoutes: readonly GatewayRoute[] = servedRouteTable.map(([method, path]) => ({ method, path }));

/** A concrete path the template matches, to ask the policy with. */
export function examplePath(template: string): string {
  return template.replace(/\/:[A-Za-z_][A-Za-z0-9_]*/g, '/id-1').replace(/\/\*$/, '/example');
}

/** The methods to ask about a route with; an ALL route is asked as a read and as a write. */
export function routeMethods(r: GatewayRoute): string[] {
  return r.method === 'ALL' ? ['GET', 'POST', 'DELETE'] : [r.method];
}

/**
 * Paths under /api that the gateway does not serve are forwarded upstream, so any pattern there
 * names something; these stand for the forwarded surface when the CLI needs concrete requests.
 */
export const forwardedExamples: readonly { method: string; path: string }[] = [
  { method: 'GET', path: '/api/projects' },
  { method: 'POST', path: '/api/projects' },
  { method: 'GET', path: '/api/billing/subscription' },
  { method: 'POST', path: '/api/billing/checkout' },
  { method: 'PUT', path: '/api/billing/auto-topup' },
  { method: 'POST', path: '/api/billing/keep-plan' },
  { method: 'GET', path: '/api/billing/subscription/switch-preview' },
  { method: 'GET', path: '/api/billing/subscription/pending' },
  { method: 'GET', path: '/api/push/devices' },
  { method: 'POST', path: '/api/push/devices' },
  { method: 'PUT', path: '/api/push/preferences' },
  { method: 'GET', path: '/api/ai/threads' },
  { method: 'PATCH', path: '/api/ai/threads/t-1' },
  { method: 'POST', path: '/api/ai/chat' },
  { method: 'POST', path: '/api/ai/capabilities/summarize/run' },
  { method: 'GET', path: '/api/ai/automations' },
  { method: 'POST', path: '/api/ai/automations' },
  { method: 'POST', path: '/api/ai/automations/a-1/run' },
  { method: 'GET', path: '/api/ai/keys' },
  { method: 'POST', path: '/api/ai/keys' },
  { method: 'POST', path: '/api/ai/integrations/slack' },
  { method: 'GET', path: '/api/ai/integrations/oauth/github/start' },
  { method: 'GET', path: '/api/ai/settings' },
  { method: 'PUT', path: '/api/ai/settings' },
  { method: 'GET', path: '/api/organizations/o-1' },
];
