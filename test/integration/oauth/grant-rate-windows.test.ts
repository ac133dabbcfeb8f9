import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { registerClient } from './support.ts';

// An OAuth grant takes its owner's plan's rate windows at consent, like its daily quota, and keeps
// them: the plan changing later does not change the grant.

async function consent(base: string, session: Client) {
  const { clientId } = await registerClient(base, 'Windows');
  const browser = new Client(base);
  browser.cookies = new Map(session.cookies);
  const q = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: 'http://127.0.0.1:9/callback', scope: 'mcp', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256', resource: `${base}/api/mcp` });
  let res = await browser.get(`/oauth/authorize?${q}`);
  for (let i = 0; i < 6 && res.status >= 300 && res.status < 400; i++) {
    const to = new URL(res.headers.location!, base);
    if (/\/oauth\/consent\/[^/]+$/.test(to.pathname)) return browser.request('POST', `${to.pathname}/allow`, undefined, { origin: base });
    res = await browser.get(to.pathname + to.search);
  }
  throw new Error(`no consent step: ${res.status} ${res.text.slice(0, 200)}`);
}

describe('OAuth grants are stamped with rate windows at consent', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  before(async () => (gw = await startTestGateway({ config: {
    plans: { free: {}, pro: { apiRateLimit: 5000, rateLimits: [{ window: '1h', limit: 900 }, { window: '10s', limit: 30 }] } },
    defaultRateLimits: [{ window: '1m', limit: 60 }],
  } })));
  after(async () => gw?.stop());

  it('the plan\'s windows shortest first, or the default windows for a plan without', async () => {
    const pro = await signUp(gw.url);
    await gw.pool.query("UPDATE users SET plan = 'pro' WHERE id = $1", [pro.user.id]);
    expect((await consent(gw.url, pro.client)).status).to.equal(303);
    const free = await signUp(gw.url);
    expect((await consent(gw.url, free.client)).status).to.equal(303);
    await gw.pool.query("UPDATE users SET plan = 'free' WHERE id = $1", [pro.user.id]);
    const { rows } = await gw.pool.query<{ user_id: string; request_quota: number; rate_limits: unknown }>(
      'SELECT user_id, request_quota, rate_limits FROM oauth_grants WHERE user_id = ANY($1)', [[pro.user.id, free.user.id]]);
    const byUser = new Map(rows.map((r) => [r.user_id, r]));
    expect(byUser.get(pro.user.id)).to.deep.include({ request_quota: 5000, rate_limits: [{ window: '10s', limit: 30 }, { window: '1h', limit: 900 }] });
    expect(byUser.get(free.user.id)).to.deep.include({ request_quota: 100, rate_limits: [{ window: '1m', limit: 60 }] });
  });
});
