import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUp, type Client } from '../../support/http.ts';

// An offset moves an instant across a year boundary: "9999-12-31T23:59:59-23:59" is in year 10000
// in UTC, which JavaScript writes "+010000-01-01T23:58:59.000Z", a timestamp no RFC 3339 reader
// takes. An expiry a key cannot be answered with is refused, and the key keeps the one it had.

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const unrepresentable = ['9999-12-31T23:59:59-23:59', '9999-12-31T23:59:59.999-00:01', '0000-01-01T00:00:00+00:01'];

describe('hostile: an expiresAt past the last four-digit year', () => {
  let gw: TestGateway;
  let client: Client;
  let key: { id: string; expiresAt: string | null };
  before(async () => {
    gw = await startTestGateway();
    ({ client } = await signUp(gw.url));
    key = (await client.post('/api/api-keys', { name: 'far' })).body;
  });
  after(async () => gw?.stop());

  for (const expiresAt of unrepresentable) {
    it(`update with expiresAt ${expiresAt} is 400 VALIDATION_FAILED and changes nothing`, async () => {
      const res = await client.post('/api/auth/api-key/update', { keyId: key.id, expiresAt });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal('VALIDATION_FAILED');
      expect(res.body.errors[0].path).to.equal('expiresAt');
      const now = await client.get(`/api/auth/api-key/get?id=${key.id}`);
      expect(now.body.expiresAt).to.equal(key.expiresAt);
    });

    it(`create with expiresAt ${expiresAt} is 400 VALIDATION_FAILED`, async () => {
      const res = await client.post('/api/api-keys', { name: 'far', expiresAt });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal('VALIDATION_FAILED');
    });
  }

  it('the last representable instant is taken and answered with a four-digit year', async () => {
    const res = await client.post('/api/auth/api-key/update', { keyId: key.id, expiresAt: '9999-12-31T23:59:59Z' });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.expiresAt).to.match(RFC3339);
    expect(res.body.expiresAt.startsWith('9999-12-31T23:59:59')).to.equal(true);
  });
});
