import { expect } from 'chai';
import type { Reply } from '../../support/http.ts';
import { describeCaller, expectForwarded, expectNotForwarded, startMatrixGateway, traced, type CallerName, type MatrixGateway } from './support.ts';

// A path is decided in its canonical spelling. Each spelling below is sent next to
// its canonical path: where the canonical path is refused, the spelling must get the same answer
// (or 400 VALIDATION_FAILED when it cannot be normalised safely), and the upstream must never see it.

interface Spelling { who: CallerName; method: string; canonical: string; spellings: string[] }

const REFUSED: Spelling[] = [
  {
    who: 'key', method: 'POST', canonical: '/api/billing/checkout',
    spellings: [
      '/api/projects/../billing/checkout',
      '/api/projects/./../billing/checkout',
      '/api/./billing/checkout',
      '/api//billing/checkout',
      '/api/billing//checkout',
      '/api/projects/%2e%2e/billing/checkout',
      '/api/projects/%2E%2E/billing/checkout',
      '/api/projects/.%2e/billing/checkout',
      '/api/%2E/billing/checkout',
      '/api/%62illing/checkout',
      '/api/billing/%63heckout',
      '/api/billing/checkout/',
      '/api/billing/checkout//',
      '/api/Billing/checkout',
      '/api/BILLING/CHECKOUT',
      '/api/billing;x=1/checkout',
      '/api/billing;/checkout',
      '/api/projects/..;/billing/checkout',
      '/api/billing/checkout;jsessionid=1',
      '/api\\billing/checkout',
      '/api/projects/..\\billing/checkout',
      '/api/projects/..%5Cbilling/checkout',
      '/api/projects%2F..%2Fbilling/checkout',
      '/api/projects/..%2Fbilling/checkout',
      '/api/projects/..%2fbilling/checkout',
      '/api/billing/checkout%00',
      '/api/billing%00/checkout',
      '/api/projects/%252e%252e/billing/checkout',
      '/api/billing/checkout/.',
      '/api/billing/checkout/%2e',
    ],
  },
  {
    who: 'key', method: 'PUT', canonical: '/api/billing/auto-topup',
    spellings: ['/api/billing/auto%2Dtopup', '/api/billing/AUTO-TOPUP', '/api/push/../billing/auto-topup', '/api/billing;v=2/auto-topup'],
  },
  {
    who: 'key', method: 'GET', canonical: '/api/billing/subscription/switch-preview',
    spellings: ['/api/billing/subscription/switch-preview/', '/api/billing/Subscription/Switch-Preview', '/api/billing/subscription;a/switch-preview', '/api/billing/subscription/%73witch-preview'],
  },
  {
    who: 'key', method: 'GET', canonical: '/api/admin/api-keys',
    spellings: [
      '/api/%61dmin/api-keys',
      '/api/%41DMIN/api-keys',
      '/api/ADMIN/api-keys',
      '/api/Admin/Api-Keys',
      '/api/admin/api-keys/',
      '/api/admin/./api-keys',
      '/api//admin//api-keys',
      '/api/projects/../admin/api-keys',
      '/api/projects/%2e%2e/admin/api-keys',
      '/api/admin;/api-keys',
      '/api/admin;x=1/api-keys',
      '/api/projects/..;/admin/api-keys',
      '/api/admin%2Fapi-keys',
      '/api\\admin\\api-keys',
      '/api/admin%00/api-keys',
    ],
  },
  {
    who: 'session', method: 'GET', canonical: '/api/admin/audit-log',
    spellings: ['/api/ADMIN/audit-log', '/api/%61dmin/audit-log', '/api/projects/../admin/audit-log', '/api/admin;/audit-log', '/api/admin/audit-log/'],
  },
  {
    who: 'key', method: 'POST', canonical: '/api/ai/chat',
    spellings: ['/api/AI/chat', '/api/%61i/chat', '/api/ai/./chat', '/api/ai//chat', '/api/projects/../ai/chat', '/api/ai;/chat', '/api/projects/..;/ai/chat', '/api/ai/chat/'],
  },
  {
    who: 'ai', method: 'PATCH', canonical: '/api/ai/threads/t-1',
    spellings: ['/api/ai/Threads/t-1', '/api/ai/threads;/t-1', '/api/ai/%74hreads/t-1', '/api/ai/automations/../threads/t-1'],
  },
  {
    who: 'ai+mcp', method: 'GET', canonical: '/api/ai/integrations/oauth/github/start',
    spellings: ['/api/ai/integrations/OAUTH/github/start', '/api/ai/integrations;/oauth/github/start', '/api/ai/integrations/oauth;/github/start', '/api/ai/integrations/./oauth/github/start'],
  },
  {
    who: 'key', method: 'POST', canonical: '/api/api-keys',
    spellings: ['/api/API-KEYS', '/api/api-keys/', '/api/api%2Dkeys', '/api/projects/../api-keys', '/api/api-keys;x=1', '/api/projects/..;/api-keys'],
  },
  {
    who: 'key', method: 'POST', canonical: '/api/auth/api-key/update',
    spellings: ['/api/auth/API-KEY/update', '/api/auth/api-key/list/../update', '/api/auth/api-key;/update', '/api/auth/get-session/../api-key/update'],
  },
  {
    who: 'key', method: 'GET', canonical: '/api/organizations/o-1',
    spellings: ['/api/Organizations/o-1', '/api/organizations;/o-1', '/api/%6Frganizations/o-1', '/api/projects/..;/organizations/o-1'],
  },
  {
    who: 'key', method: 'POST', canonical: '/api/mcp',
    spellings: ['/api/mcp/', '/api/projects/../mcp', '/api/%6Dcp', '/api/MCP', '/api/mcp;x=1'],
  },
  {
    who: 'anonymous', method: 'POST', canonical: '/api/projects',
    spellings: ['/api/auth/sign-in/email/../../../projects', '/api/auth/sign-up/email;/../../../projects', '/healthz/../api/projects', '/v1/content/../../api/projects', '/api/auth/sign-in/email/..;/..;/..;/projects'],
  },
];

const decision = (res: Reply) => `${res.status} ${res.body?.code ?? res.body?.error ?? ''}`.trim();

describe('path spellings: every spelling of a path is decided as its canonical path', () => {
  let m: MatrixGateway;
  before(async () => {
    m = await startMatrixGateway('A', { env: { CONTENT_API_KEY: 's3cret' } });
  });
  after(async () => m?.stop());

  describe('when the canonical path is refused, then every other spelling is refused the same way (or 400 VALIDATION_FAILED), and the upstream never hears of it', () => {
    for (const { who, method, canonical, spellings } of REFUSED) {
      describe(`${describeCaller[who]}: ${method} ${canonical}`, () => {
        let expected: Reply;
        before(async () => {
          const { res, upstream } = await traced(m.echo, m.parties[who].client(), method, canonical, method === 'GET' ? undefined : {});
          expectNotForwarded(upstream);
          expect(res.status, 'the canonical path must be refused to make this a bypass test').to.be.oneOf([401, 403]);
          expected = res;
        });

        for (const spelling of spellings) {
          it(JSON.stringify(spelling), async () => {
            const { res, upstream } = await traced(m.echo, m.parties[who].client(), method, spelling, method === 'GET' ? undefined : {});
            expectNotForwarded(upstream);
            const got = decision(res);
            if (got === '400 VALIDATION_FAILED') return;
            expect(got, `${spelling} answered ${res.status} ${res.text.slice(0, 200)}`).to.equal(decision(expected));
            expect(res.body?.requiredPermission).to.equal(expected.body?.requiredPermission);
          });
        }
      });
    }
  });

  describe('when the canonical path is served by the gateway itself, then another letter case of it is answered the same (or 400/404) and never forwarded upstream', () => {
    // The policy decides on the lower-cased path, so these were decided as the gateway's own route.
    const mcpInitialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'matrix', version: '0' } } };
    const served: { who: CallerName; method: string; canonical: string; spelling: string; body?: unknown; headers?: Record<string, string> }[] = [
      { who: 'mcp', method: 'POST', canonical: '/api/mcp', spelling: '/api/MCP', body: mcpInitialize, headers: { accept: 'application/json, text/event-stream' } },
      { who: 'mcp', method: 'POST', canonical: '/api/mcp', spelling: '/api/Mcp/', body: mcpInitialize, headers: { accept: 'application/json, text/event-stream' } },
      { who: 'admin', method: 'GET', canonical: '/api/admin/api-keys', spelling: '/api/ADMIN/API-KEYS' },
      { who: 'key', method: 'GET', canonical: '/api/auth/get-session', spelling: '/api/Auth/get-session' },
      { who: 'key', method: 'GET', canonical: '/api/api-keys', spelling: '/api/API-KEYS' },
      { who: 'session', method: 'POST', canonical: '/api/auth/organization/set-active', spelling: '/api/auth/Organization/set-active', body: { organizationId: null } },
    ];
    for (const s of served) {
      it(`${describeCaller[s.who]}: ${s.method} ${s.spelling}`, async () => {
        const canonical = await traced(m.echo, m.parties[s.who].client(), s.method, s.canonical, s.body, s.headers);
        expectNotForwarded(canonical.upstream);
        const { res, upstream } = await traced(m.echo, m.parties[s.who].client(), s.method, s.spelling, s.body, s.headers);
        expect(upstream.map((u) => `${u.method} ${u.path} as ${u.headers['x-keygate-subject']}`), 'a route the gateway serves must not be forwarded under another spelling').to.deep.equal([]);
        expect(res.status).to.be.oneOf([canonical.res.status, 400, 404]);
      });
    }
  });

  describe('when a path cannot be normalised safely, then it is 400 VALIDATION_FAILED and nothing is forwarded', () => {
    const unsafe = [
      '/api/projects%2Fp-1',
      '/api/projects/p-1%00',
      '/api/projects/%5C',
      '/api/projects/%25',
      '/api/projects/%zz',
      '/api/projects/../../../etc/passwd',
      '/api/%2e%2e/%2e%2e/%2e%2e/etc/passwd',
    ];
    for (const path of unsafe) {
      it(JSON.stringify(path), async () => {
        const { res, upstream } = await traced(m.echo, m.parties.session.client(), 'GET', path);
        expectNotForwarded(upstream);
        expect(res.status, res.text).to.equal(400);
        if (res.headers['content-type']?.startsWith('application/problem+json')) expect(res.body.code).to.equal('VALIDATION_FAILED');
      });
    }
  });

  describe('when the canonical path is allowed, then the upstream receives the canonical spelling', () => {
    const allowed: { who: CallerName; method: string; sent: string; body?: unknown; path: string; query?: Record<string, string> }[] = [
      { who: 'key', method: 'GET', sent: '/api/projects/./p-1/', path: '/api/projects/p-1' },
      { who: 'key', method: 'GET', sent: '/api/%70rojects', path: '/api/projects' },
      { who: 'key', method: 'GET', sent: '/api/projects/../projects?x=1&y=%2F', path: '/api/projects', query: { x: '1', y: '/' } },
      { who: 'session', method: 'POST', sent: '/api//projects/x/../', body: { name: 'Apollo' }, path: '/api/projects' },
      { who: 'ai', method: 'POST', sent: '/api/ai/threads/t-1/../../chat', body: { message: 'hi' }, path: '/api/ai/chat' },
      { who: 'key', method: 'GET', sent: '/api/projects/a%20b', path: '/api/projects/a%20b' },
    ];
    for (const a of allowed) {
      it(`${describeCaller[a.who]}: ${a.method} ${a.sent} reaches the upstream as ${a.path}`, async () => {
        const party = m.parties[a.who];
        const { res, upstream } = await traced(m.echo, party.client(), a.method, a.sent, a.body);
        expectForwarded(res, upstream, { method: a.method, path: a.path, query: a.query, body: a.body }, party.identity);
      });
    }
  });
});
