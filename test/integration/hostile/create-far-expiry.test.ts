import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUp } from '../../support/http.ts';

// `expiresAt` at creation was bounded below only. `9999-12-31T23:59:59Z` made a key that
// outlives every policy and answered `+010000-…` once a lifetime was added to it (not RFC 3339).
// Now it is at most 31,536,000 s ahead, like expiresIn, and every instant answered has four digits.

const YEAR_MS = 31_536_000_000;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

describe('hostile: a key created to expire in the far future', () => {
  let gw: TestGateway;
  before(async () => (gw = await startTestGateway()));
  after(async () => gw?.stop());

  const far: [string, (now: number) => string][] = [
    ['9999-12-31T23:59:59Z', () => '9999-12-31T23:59:59Z'],
    ['9999-12-31T23:59:59.999+00:00', () => '9999-12-31T23:59:59.999+00:00'],
    ['a year and a second ahead', (now) => new Date(now + YEAR_MS + 1000).toISOString()],
    ['+010000-01-01T00:00:00Z (six-digit year)', () => '+010000-01-01T00:00:00Z'],
  ];
  for (const [what, at] of far) {
    it(`when expiresAt is ${what}, then it is 400 VALIDATION_FAILED naming expiresAt and no key is made`, async () => {
      const { client, user } = await signUp(gw.url);
      const res = await client.post('/api/api-keys', { name: 'forever', expiresAt: at(gw.clock.now().getTime()) });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal('VALIDATION_FAILED');
      expect(res.body.errors.map((e: { path: string }) => e.path)).to.include('expiresAt');
      const { rows } = await gw.pool.query('SELECT count(*)::int AS n FROM apikeys WHERE user_id = $1', [user.id]);
      expect(rows[0].n).to.equal(0);
    });
  }

  it('when expiresAt is exactly a year ahead, then the key is made and every instant answered is RFC 3339 with four digits', async () => {
    const { client } = await signUp(gw.url);
    const at = new Date(gw.clock.now().getTime() + YEAR_MS).toISOString();
    const res = await client.post('/api/api-keys', { name: 'a year', expiresAt: at });
    expect(res.status, res.text).to.equal(201);
    expect(res.body.expiresAt).to.equal(at);
    for (const field of ['expiresAt', 'createdAt']) expect(res.body[field], field).to.match(RFC3339);
    const rotated = await client.post(`/api/api-keys/${res.body.id}/rotate`, { gracePeriodSeconds: 0 });
    expect(rotated.status, rotated.text).to.equal(201);
    expect(rotated.body.expiresAt).to.match(RFC3339);
  });

  it('when a key is moved to 9999-12-31 by the update route and rotated, then the successor expires within a year, in four digits', async () => {
    const { client } = await signUp(gw.url);
    const key = (await client.post('/api/api-keys', { name: 'moved', expiresIn: 7200 })).body;
    const moved = await client.post('/api/auth/api-key/update', { keyId: key.id, expiresAt: '9999-12-31T23:59:59Z' });
    expect(moved.status, moved.text).to.equal(200);
    expect(moved.body.expiresAt).to.equal('9999-12-31T23:59:59.000Z');
    // A day later: keeping the old lifetime length would now end past 9999 (`+010000-…`).
    gw.clock.advance(86_400_000);
    try {
      const rotated = await client.post(`/api/api-keys/${key.id}/rotate`, { gracePeriodSeconds: 0 });
      expect(rotated.status, rotated.text).to.equal(201);
      expect(rotated.body.expiresAt).to.match(RFC3339);
      expect(new Date(rotated.body.expiresAt).getTime()).to.be.at.most(gw.clock.now().getTime() + YEAR_MS);
    } finally {
      gw.clock.advance(-86_400_000);
    }
  });
});
