import { randomUUID } from 'node:crypto';
import type { CallerName, Identity } from './support.ts';

// The access matrix of both variants (Variant A: scoped keys; Variant B: a key is a session), one row
// per surface, each with representative requests. The test walks every row for every caller,
// through the real HTTP server and a real echo upstream.

/** What a key may do on a surface. */
export type KeyAccess =
  | 'open' //       allowed, nothing needed
  | 'never' //      403 whatever the key's permissions: signed-in session only
  | 'needs ai' //   403 naming requiredPermission "ai" unless the key has it
  | 'needs mcp'; // refused unless the key has mcp

/** What a session may do on a surface. */
export type SessionAccess =
  | 'open'
  | 'admin only' //     403 to a session without the admin role
  | 'variant B only' // 403 to every session under Variant A
  | 'keys only'; //     refused to every session (the MCP server takes keys)

export interface MatrixRequest {
  method: string;
  /** Canonical path; `{own}` is a key id the caller's user owns, `{uuid}` a fresh id nobody owns. */
  path: string;
  query?: Record<string, string>;
  body?: unknown | ((who: { owner: { email: string; password: string } }) => unknown);
  headers?: Record<string, string>;
  /** Served by the gateway itself: the status (and code) an allowed caller gets. Absent: forwarded upstream. */
  local?: { status: number; code?: string };
}

export interface Surface {
  /** The surface, as a person names it. */
  surface: string;
  keys: { A: KeyAccess; B: KeyAccess };
  sessions?: SessionAccess;
  /** Sign-up and sign-in are open to anonymous callers; everything else needs a caller. */
  anonymous?: 'open' | 'needs a caller';
  /** Refusals take the OAuth 401 form (only /api/mcp). */
  oauth?: true;
  requests: MatrixRequest[];
}

const req = (method: string, path: string, more: Omit<MatrixRequest, 'method' | 'path'> = {}): MatrixRequest => ({ method, path, ...more });
const local = (status: number, code?: string) => ({ local: code ? { status, code } : { status } });
let n = 0;
const unique = () => `m${Date.now().toString(36)}${(n++).toString(36)}`;

const mcpInitialize = {
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'matrix', version: '0' } },
};

export const MATRIX: Surface[] = [
  {
    surface: 'authGuard routes (billing reads, /projects, and so on)',
    keys: { A: 'open', B: 'open' },
    requests: [
      req('GET', '/api/billing/invoices', { query: { status: 'open', page: '2' } }),
      req('GET', '/api/billing/subscription'),
      req('GET', '/api/projects', { query: { sort: 'name' } }),
      req('POST', '/api/projects', { body: { name: 'Apollo' } }),
      req('PATCH', '/api/projects/p-1', { body: { name: 'Gemini' } }),
      req('DELETE', '/api/projects/p-1'),
      req('GET', '/api/push/preferences'),
      req('GET', '/api/push/devices'),
    ],
  },
  {
    surface: 'every billing write: any /billing/* method but GET, HEAD, OPTIONS; checkouts; PUT /billing/auto-topup; keep-plan',
    keys: { A: 'never', B: 'open' },
    requests: [
      req('POST', '/api/billing/checkout', { body: { plan: 'pro' } }),
      req('POST', '/api/billing/checkout/credits', { body: { amount: 50 } }),
      req('PUT', '/api/billing/auto-topup', { body: { enabled: true, threshold: 10 } }),
      req('POST', '/api/billing/keep-plan', { body: {} }),
      req('PATCH', '/api/billing/subscription', { body: { plan: 'team' } }),
      req('DELETE', '/api/billing/payment-methods/pm-1'),
    ],
  },
  {
    surface: 'the billing reads GET /billing/subscription/switch-preview and /pending',
    keys: { A: 'never', B: 'open' },
    requests: [
      req('GET', '/api/billing/subscription/switch-preview', { query: { plan: 'team' } }),
      req('GET', '/api/billing/subscription/pending'),
    ],
  },
  {
    surface: 'push writes: every /push/* method but GET, HEAD, OPTIONS (devices, preferences)',
    keys: { A: 'never', B: 'open' },
    requests: [
      req('POST', '/api/push/devices', { body: { token: 'device-token' } }),
      req('DELETE', '/api/push/devices/d-1'),
      req('PUT', '/api/push/preferences', { body: { digest: false } }),
      req('PATCH', '/api/push/preferences', { body: { digest: true } }),
    ],
  },
  {
    surface: '/ai/* reads, chat, capability runs',
    keys: { A: 'needs ai', B: 'open' },
    requests: [
      req('GET', '/api/ai'),
      req('GET', '/api/ai/threads', { query: { limit: '5' } }),
      req('GET', '/api/ai/threads/t-1'),
      req('GET', '/api/ai/keys'),
      req('GET', '/api/ai/integrations'),
      req('GET', '/api/ai/settings'),
      req('POST', '/api/ai/chat', { body: { message: 'hello' } }),
      req('POST', '/api/ai/capabilities/summarize/run', { body: { text: 'long' } }),
    ],
  },
  {
    surface: 'automations (/ai/automations/*): create, edit, delete and run',
    keys: { A: 'needs ai', B: 'open' },
    requests: [
      req('GET', '/api/ai/automations'),
      req('POST', '/api/ai/automations', { body: { name: 'nightly', schedule: '0 3 * * *' } }),
      req('PATCH', '/api/ai/automations/a-1', { body: { schedule: '0 4 * * *' } }),
      req('DELETE', '/api/ai/automations/a-1'),
      req('POST', '/api/ai/automations/a-1/run', { body: {} }),
    ],
  },
  {
    surface: 'every change to /ai/keys, /ai/integrations, /ai/threads (rename, append, title, delete), and PUT /ai/settings',
    keys: { A: 'never', B: 'open' },
    requests: [
      req('POST', '/api/ai/keys', { body: { provider: 'openai', key: 'sk-x' } }),
      req('DELETE', '/api/ai/keys/k-1'),
      req('POST', '/api/ai/integrations/slack', { body: { channel: '#ops' } }),
      req('DELETE', '/api/ai/integrations/slack'),
      req('POST', '/api/ai/threads', { body: { title: 'new' } }),
      req('PATCH', '/api/ai/threads/t-1', { body: { name: 'renamed' } }),
      req('POST', '/api/ai/threads/t-1/messages', { body: { text: 'appended' } }),
      req('PUT', '/api/ai/threads/t-1/title', { body: { title: 'titled' } }),
      req('DELETE', '/api/ai/threads/t-1'),
      req('PUT', '/api/ai/settings', { body: { model: 'large' } }),
    ],
  },
  {
    surface: '/ai/integrations/oauth/:provider/*',
    keys: { A: 'never', B: 'open' },
    requests: [
      req('GET', '/api/ai/integrations/oauth/github/start'),
      req('GET', '/api/ai/integrations/oauth/github/callback', { query: { code: 'c', state: 's' } }),
      req('POST', '/api/ai/integrations/oauth/google/disconnect', { body: {} }),
    ],
  },
  {
    surface: '/api/mcp (MCP server, served by the gateway)',
    keys: { A: 'needs mcp', B: 'never' },
    sessions: 'keys only',
    oauth: true,
    requests: [req('POST', '/api/mcp', { body: mcpInitialize, headers: { accept: 'application/json, text/event-stream' }, ...local(200) })],
  },
  {
    surface: 'adminGuard routes: /api/admin/** (served by the gateway, or forwarded)',
    keys: { A: 'never', B: 'never' },
    sessions: 'admin only',
    requests: [
      req('GET', '/api/admin/api-keys', { query: { limit: '5' }, ...local(200) }),
      req('DELETE', '/api/admin/api-keys/{uuid}', local(404, 'NOT_FOUND')),
      req('GET', '/api/admin/audit-log', local(200)),
      req('POST', '/api/admin/users/{uuid}/ban', { body: {}, ...local(404, 'NOT_FOUND') }),
      req('POST', '/api/admin/users/{uuid}/unban', { body: {}, ...local(404, 'NOT_FOUND') }),
      req('GET', '/api/admin/reports', { query: { from: '2026-01-01' } }),
      req('GET', '/api/admin'),
    ],
  },
  {
    surface: 'orgAdminGuard routes: /api/organizations/** (forwarded; the upstream checks organization roles)',
    keys: { A: 'never', B: 'open' },
    requests: [
      req('GET', '/api/organizations/o-1'),
      req('GET', '/api/organizations/o-1/members'),
      req('POST', '/api/organizations/o-1/members', { body: { email: 'x@example.test', role: 'member' } }),
      req('DELETE', '/api/organizations/o-1/members/u-2'),
    ],
  },
  {
    surface: 'the five auth-layer endpoints open to keys',
    keys: { A: 'open', B: 'open' },
    requests: [
      req('GET', '/api/auth/get-session', local(200)),
      req('GET', '/api/auth/api-key/get', { query: { id: '{own}' }, ...local(200) }),
      req('GET', '/api/auth/api-key/list', local(200)),
      req('GET', '/api/auth/organization/list', local(200)),
      req('GET', '/api/auth/organization/get-active-member', local(404, 'NOT_FOUND')),
    ],
  },
  {
    surface: 'sign-up and sign-in: open to anonymous callers and sessions, never to keys',
    keys: { A: 'never', B: 'never' },
    anonymous: 'open',
    requests: [
      req('POST', '/api/auth/sign-up/email', { body: () => ({ email: `${unique()}@example.test`, password: 'long enough', name: 'New' }), ...local(201) }),
      req('POST', '/api/auth/sign-in/email', { body: (w: { owner: { email: string; password: string } }) => w.owner, ...local(200) }),
    ],
  },
  {
    // An invalid body where the real call would end the session or the account: the handler's
    // own 400 shows the request got past the policy.
    surface: 'account endpoints of the auth layer (sessions, password, deletion, organizations) and any other /auth/*',
    keys: { A: 'never', B: 'never' },
    requests: [
      req('GET', '/api/auth/list-sessions', local(200)),
      req('POST', '/api/auth/sign-out', { body: { everywhere: true }, ...local(400, 'VALIDATION_FAILED') }),
      req('POST', '/api/auth/revoke-session', { body: { sessionId: '{uuid}' }, ...local(404, 'NOT_FOUND') }),
      req('POST', '/api/auth/change-password', { body: { currentPassword: 'x', newPassword: 'short' }, ...local(400, 'VALIDATION_FAILED') }),
      req('POST', '/api/auth/delete-user', { body: {}, ...local(400, 'VALIDATION_FAILED') }),
      req('POST', '/api/auth/organization/create', { body: {}, ...local(400, 'VALIDATION_FAILED') }),
      req('POST', '/api/auth/organization/set-active', { body: { organizationId: null }, ...local(200) }),
      req('POST', '/api/auth/passkey/add', { body: { name: 'laptop' } }),
      req('POST', '/api/auth/change-email', { body: { newEmail: 'new@example.test' } }),
      req('GET', '/api/auth'),
    ],
  },
  {
    surface: "the auth layer's key create and delete: Variant A nobody (403), Variant B session or key",
    keys: { A: 'never', B: 'open' },
    sessions: 'variant B only',
    requests: [
      req('POST', '/api/auth/api-key/create', { body: { name: 'auth-layer' }, ...local(201) }),
      req('POST', '/api/auth/api-key/delete', { body: { keyId: '{uuid}' }, ...local(404, 'NOT_FOUND') }),
    ],
  },
  {
    surface: "the auth layer's key update: session only, any request carrying x-api-key gets 403 (both variants)",
    keys: { A: 'never', B: 'never' },
    requests: [req('POST', '/api/auth/api-key/update', { body: { keyId: '{uuid}', name: 'renamed' }, ...local(404, 'NOT_FOUND') })],
  },
  {
    surface: 'key management: POST /api-keys, DELETE /api-keys/:id need a signed-in session (Variant A)',
    keys: { A: 'never', B: 'open' },
    requests: [
      req('POST', '/api/api-keys', { body: { name: 'from the matrix' }, ...local(201) }),
      req('DELETE', '/api/api-keys/{uuid}', local(404, 'NOT_FOUND')),
    ],
  },
  {
    surface: 'listing keys stays open to keys: GET /api-keys',
    keys: { A: 'open', B: 'open' },
    requests: [req('GET', '/api/api-keys', local(200))],
  },
];

export type Outcome =
  | { kind: 'forwarded' }
  | { kind: 'served'; status: number; code?: string }
  | { kind: 'forbidden'; requiredPermission: 'ai' | null }
  | { kind: 'unauthenticated' }
  | { kind: 'oauth' };

const scopesOf: Record<CallerName, string[]> = { session: [], admin: [], key: [], ai: ['ai'], mcp: ['mcp'], 'ai+mcp': ['ai', 'mcp'], anonymous: [] };

/** What the matrix says `caller` gets for `request` on `surface` under `variant`. */
export function expectedOutcome(surface: Surface, request: MatrixRequest, caller: CallerName, variant: 'A' | 'B'): Outcome {
  const allowed: Outcome = request.local ? { kind: 'served', ...request.local } : { kind: 'forwarded' };
  const refused = (requiredPermission: 'ai' | null = null): Outcome => (surface.oauth ? { kind: 'oauth' } : { kind: 'forbidden', requiredPermission });
  if (caller === 'anonymous') {
    if (surface.anonymous === 'open') return allowed;
    return surface.oauth ? { kind: 'oauth' } : { kind: 'unauthenticated' };
  }
  if (caller === 'session' || caller === 'admin') {
    const access = surface.sessions ?? 'open';
    if (access === 'open') return allowed;
    if (access === 'admin only') return caller === 'admin' ? allowed : refused();
    if (access === 'variant B only') return variant === 'B' ? allowed : refused();
    return refused();
  }
  const scopes = scopesOf[caller];
  switch (surface.keys[variant]) {
    case 'open':
      return allowed;
    case 'never':
      return refused();
    case 'needs ai':
      return scopes.includes('ai') ? allowed : refused('ai');
    case 'needs mcp':
      return scopes.includes('mcp') ? allowed : refused();
  }
}

/** The request as sent by `who`: placeholders filled, the body made. */
export function concrete(request: MatrixRequest, who: Identity, owner: { email: string; password: string }): { method: string; path: string; query?: Record<string, string>; target: string; body: unknown } {
  const fill = (s: string) => s.replace('{own}', who.ownKeyId ?? randomUUID()).replace('{uuid}', randomUUID());
  const path = fill(request.path);
  const query = request.query ? Object.fromEntries(Object.entries(request.query).map(([k, v]) => [k, fill(v)])) : undefined;
  const body = typeof request.body === 'function' ? (request.body as (w: { owner: typeof owner }) => unknown)({ owner }) : request.body;
  const filledBody = body === undefined ? undefined : JSON.parse(fill(JSON.stringify(body)));
  return { method: request.method, path, query, target: query ? `${path}?${new URLSearchParams(query)}` : path, body: filledBody };
}
