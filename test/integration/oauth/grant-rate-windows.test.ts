import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { allowNewClient } from './support.ts';

// An OAuth grant takes its owner's plan's rate windows at consent, like its daily quota, and keeps
// them: the plan changing later does not change the grant.

const consent = (base: string, session: Client) => allowNewClient(base, session, 'Windows');

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
