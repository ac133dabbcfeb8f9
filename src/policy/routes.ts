// The routes the gateway serves itself, as the policy sees them (default prefix /api). The policy
// CLI checks every one is decided by a policy line for each subject kind; a router test checks the
// real router matches this table, so the two cannot drift apart unnoticed.

export interface GatewayRoute {
  /** 'ALL' for a route that answers every method (the MCP endpoint). */
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'ALL';
  /** `:name` is one segment; a trailing `*` is anything beneath (one or more segments). */
  path: string;
}

const route = (method: GatewayRoute['method'], path: string): GatewayRoute => ({ method, path });

export const gatewayRoutes: readonly GatewayRoute[] = [
  route('POST', '/api/auth/sign-up/email'),
  route('POST', '/api/auth/sign-in/email'),
  route('POST', '/api/auth/sign-out'),
  route('GET', '/api/auth/get-session'),
  route('GET', '/api/auth/list-sessions'),
  route('POST', '/api/auth/revoke-session'),
  route('POST', '/api/auth/change-password'),
  route('POST', '/api/auth/delete-user'),
  route('POST', '/api/auth/api-key/create'),
  route('POST', '/api/auth/api-key/update'),
  route('POST', '/api/auth/api-key/delete'),
  route('GET', '/api/auth/api-key/get'),
  route('GET', '/api/auth/api-key/list'),
  route('POST', '/api/auth/organization/create'),
  route('POST', '/api/auth/organization/set-active'),
  route('GET', '/api/auth/organization/list'),
  route('GET', '/api/auth/organization/get-active-member'),
  route('GET', '/api/api-keys'),
  route('GET', '/api/api-keys/leaked'),
  route('POST', '/api/api-keys'),
  route('DELETE', '/api/api-keys/:id'),
  route('GET', '/api/scopes'),
  route('POST', '/api/api-keys/:id/rotate'),
  route('GET', '/api/api-keys/:id/usage'),
  route('GET', '/api/admin/api-keys/:id/usage'),
  route('GET', '/api/openapi.json'),
  route('GET', '/api/admin/api-keys'),
  route('PATCH', '/api/admin/api-keys/:id'),
  route('DELETE', '/api/admin/api-keys/:id'),
  route('GET', '/api/admin/audit-log'),
  route('POST', '/api/admin/users/:id/ban'),
  route('POST', '/api/admin/users/:id/unban'),
  route('GET', '/api/admin/overview'),
  route('GET', '/api/admin/users'),
  route('POST', '/api/admin/users/:id/role'),
  route('POST', '/api/admin/users/:id/plan'),
  route('GET', '/api/admin/policy'),
  route('GET', '/api/admin/policy/versions'),
  route('GET', '/api/admin/policy/versions/:v'),
  route('GET', '/api/admin/policy/versions/:v/changes'),
  route('POST', '/api/admin/policy/rollback'),
  route('GET', '/api/admin/policy/shadow'),
  route('POST', '/api/admin/policy/shadow/promote'),
  route('DELETE', '/api/admin/policy/shadow'),
  route('POST', '/api/admin/policy/explain'),
  route('GET', '/api/admin/fleet'),
  route('GET', '/api/admin/webhooks'),
  route('POST', '/api/admin/webhooks'),
  route('GET', '/api/admin/webhooks/:id'),
  route('PATCH', '/api/admin/webhooks/:id'),
  route('DELETE', '/api/admin/webhooks/:id'),
  route('POST', '/api/admin/webhooks/:id/rotate-secret'),
  route('POST', '/api/admin/webhooks/:id/test'),
  route('GET', '/api/admin/webhooks/:id/deliveries'),
  route('POST', '/api/admin/webhooks/:id/deliveries/:eventId/redeliver'),
  route('POST', '/api/secret-scanning/github'),
  route('GET', '/api/admin/usage'),
  route('GET', '/api/admin/audit-log/export'),
  route('GET', '/api/oauth/grants'),
  route('DELETE', '/api/oauth/grants/:id'),
  route('GET', '/oauth/consent/:uid'),
  route('POST', '/oauth/consent/:uid/allow'),
  route('POST', '/oauth/consent/:uid/deny'),
  route('ALL', '/oauth/*'),
  route('ALL', '/api/mcp'),
  route('ALL', '/api/mcp/*'),
  route('GET', '/.well-known/*'),
  route('GET', '/healthz'),
  route('GET', '/readyz'),
  route('GET', '/metrics'),
  route('GET', '/'),
  route('GET', '/sign-in'),
  route('POST', '/sign-in'),
  route('POST', '/sign-up'),
  route('GET', '/settings/developers'),
  route('GET', '/admin'),
  route('GET', '/admin/users'),
  route('GET', '/admin/users/:id/:action'),
  route('POST', '/admin/users/:id/:action'),
  route('GET', '/admin/keys'),
  route('GET', '/admin/keys/:id/:action'),
  route('POST', '/admin/keys/:id/:action'),
  route('GET', '/admin/audit'),
  route('GET', '/admin/policy'),
  route('GET', '/admin/webhooks'),
  route('POST', '/admin/webhooks'),
  route('GET', '/admin/webhooks/:id'),
  route('POST', '/admin/webhooks/:id/:action'),
  route('POST', '/admin/webhooks/:id/deliveries/:eventId/redeliver'),
  route('GET', '/admin/policy/:action'),
  route('POST', '/admin/policy/:action'),
  route('GET', '/assets/*'),
  route('GET', '/v1/content'),
  route('GET', '/v1/content/*'),
];

/** A concrete path the template matches, to ask the policy with. */
export function examplePath(template: string): string {
  if (template === '/.well-known/*') return '/.well-known/oauth-protected-resource';
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
