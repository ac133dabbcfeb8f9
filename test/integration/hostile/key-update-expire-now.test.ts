import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';

// An owner who finds a key leaked expires it now by setting expiresAt to the past.
// The update route refused anything less than an hour ahead, leaving the key working for that hour.

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

describe('hostile: a leaked key its owner wants to expire now', () => {
  let gw: TestGateway;
  before(async () => (gw = await startTestGateway()));
  after(async () => gw?.stop());

  for (const [what, at] of [['a minute ago', (now: number) => new Date(now - 60_000).toISOString()], ['long ago', () => '2001-02-03T04:05:06Z'], ['this very instant', (now: number) => new Date(now).toISOString()]] as const) {
    it(`when the owner sets expiresAt to ${what}, then the key is expired at once and refused`, async () => {
      const { client } = await signUp(gw.url);
      const key = (await client.post('/api/api-keys', { name: 'leaked' })).body;
      const asKey = new Client(gw.url).withKey(key.key);
      expect((await asKey.get('/api/auth/get-session')).status).to.equal(200);
      const expiresAt = at(gw.clock.now().getTime());

      const res = await client.post('/api/auth/api-key/update', { keyId: key.id, expiresAt });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.state).to.equal('expired');
      expect(new Date(res.body.expiresAt).getTime()).to.equal(new Date(expiresAt).getTime());
      expect(res.body.expiresAt).to.match(RFC3339);

      const refused = await asKey.get('/api/auth/get-session');
      expect(refused.status).to.equal(401);
      expect(refused.body.code).to.equal('INVALID_API_KEY');
    });
  }

  describe('with apiKeys.maxLifetimeDays: 30', () => {
    let bounded: TestGateway;
    before(async () => (bounded = await startTestGateway({ config: { apiKeys: { maxLifetimeDays: 30 } } })));
    after(async () => bounded?.stop());

    it('then the past is still allowed, and only later than 30 days or null is 400 VALIDATION_FAILED', async () => {
      const { client } = await signUp(bounded.url);
      const key = (await client.post('/api/api-keys', { name: 'k' })).body;
      const now = bounded.clock.now().getTime();
      for (const expiresAt of [null, new Date(now + 31 * 86_400_000).toISOString()]) {
        const res = await client.post('/api/auth/api-key/update', { keyId: key.id, expiresAt });
        expect(res.status, String(expiresAt)).to.equal(400);
        expect(res.body.code).to.equal('VALIDATION_FAILED');
      }
      const past = await client.post('/api/auth/api-key/update', { keyId: key.id, expiresAt: new Date(now - 1000).toISOString() });
      expect(past.status, past.text).to.equal(200);
      expect(past.body.state).to.equal('expired');
      expect((await new Client(bounded.url).withKey(key.key).get('/api/auth/get-session')).status).to.equal(401);
    });
  });
});
