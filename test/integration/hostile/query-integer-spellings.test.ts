import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';

// Query integers are plain decimal digits. z.coerce read "0x10" as 16, "1e1" as 10 and
// " 5" as 5, so one number had endless spellings: past a filter or cache in front of the gateway
// that compares text, and a parser the documentation does not describe. Leading zeros ("05") are
// padding too and are refused: a number has one spelling.

const SPELLINGS = ['0x10', '1e1', '30.0', '%205', '5%20', '+5', '05', '-5', '1_0', '%EF%BC%95', '5.', '.5', 'Infinity', ''];

describe('hostile: query integers spelled other than in plain decimal digits', () => {
  let gw: TestGateway;
  let admin: Client;
  let keyId: string;
  before(async () => {
    gw = await startTestGateway();
    const a = await signUp(gw.url);
    await gw.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [a.user.id]);
    admin = a.client;
    keyId = (await admin.post('/api/api-keys', { name: 'k' })).body.id as string;
  });
  after(async () => gw?.stop());

  const routes = (): [string, string][] => [
    ['days', `/api/api-keys/${keyId}/usage`],
    ['days', `/api/admin/api-keys/${keyId}/usage`],
    ['limit', '/api/admin/api-keys'],
    ['limit', '/api/admin/audit-log'],
  ];

  it('when the value is plain digits, then it is taken', async () => {
    for (const [name, path] of routes()) {
      const res = await admin.get(`${path}?${name}=16`);
      expect(res.status, `${path} ${res.text}`).to.equal(200);
    }
    expect((await admin.get(`/api/api-keys/${keyId}/usage?days=16`)).body.days).to.have.length(16);
  });

  for (const spelling of SPELLINGS) {
    it(`when the value is "${spelling}", then every route answers 400 VALIDATION_FAILED naming the query`, async () => {
      for (const [name, path] of routes()) {
        const res = await admin.get(`${path}?${name}=${spelling}`);
        expect(res.status, `${path}?${name}=${spelling}: ${res.text}`).to.equal(400);
        expect(res.body.code).to.equal('VALIDATION_FAILED');
        expect(res.body.errors[0].path).to.equal(name);
        expect(res.body.detail).to.match(/^Invalid query: /);
      }
    });
  }
});
