import { expect } from 'chai';
import { useGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';

const HOUR = 3600_000;
const DAY = 24 * HOUR;

async function keyCount(gw: TestGateway, userId: string): Promise<number> {
  const { rows } = await gw.pool.query<{ n: number }>('SELECT count(*)::int n FROM apikeys WHERE user_id = $1', [userId]);
  return rows[0]!.n;
}

describe('API keys: expiry at creation', () => {
  describe('without maxLifetimeDays (Variant A)', () => {
    let gw: TestGateway;
    useGateway({}, (g) => (gw = g));

    it('expiresIn sets expiresAt that many seconds ahead, and the key stops working then', async () => {
      const { client } = await signUp(gw.url);
      const now = gw.clock.now().getTime();
      const res = await client.post('/api/api-keys', { name: 'ci', expiresIn: 7200 });
      expect(res.status).to.equal(201);
      const at = new Date(res.body.expiresAt).getTime();
      expect(at - now).to.be.within(7200_000 - 5000, 7200_000 + 5000);
      expect(res.body.expiresSoon).to.equal(true);
      const keyClient = new Client(gw.url).withKey(res.body.key);
      expect((await keyClient.get('/api/auth/get-session')).status).to.equal(200);
      gw.clock.advance(2 * HOUR + 1000);
      try {
        expect((await keyClient.get('/api/auth/get-session')).status).to.equal(401);
        expect((await client.get('/api/api-keys')).body.keys[0].state).to.equal('expired');
      } finally {
        gw.clock.advance(-(2 * HOUR + 1000));
      }
    });

    it('expiresAt is kept as given; no expiry is kept as null', async () => {
      const { client } = await signUp(gw.url);
      const at = new Date(gw.clock.now().getTime() + 30 * DAY).toISOString();
      const res = await client.post('/api/api-keys', { name: 'dated', expiresAt: at });
      expect(res.status).to.equal(201);
      expect(res.body).to.include({ expiresAt: at, expiresSoon: false });
      expect((await client.post('/api/api-keys', { name: 'forever' })).body.expiresAt).to.equal(null);
    });

    const refused: [string, () => Record<string, unknown>, string][] = [
      ['expiresIn under an hour', () => ({ expiresIn: 3599 }), 'expiresIn'],
      ['expiresIn over a year', () => ({ expiresIn: 31_536_001 }), 'expiresIn'],
      ['a fractional expiresIn', () => ({ expiresIn: 3600.5 }), 'expiresIn'],
      ['expiresAt less than an hour ahead', () => ({ expiresAt: new Date(Date.now() + 59 * 60_000).toISOString() }), 'expiresAt'],
      ['expiresAt in the past', () => ({ expiresAt: '2020-01-01T00:00:00Z' }), 'expiresAt'],
      ['expiresAt that is not a date', () => ({ expiresAt: 'tomorrow' }), 'expiresAt'],
      ['both expiresIn and expiresAt', () => ({ expiresIn: 7200, expiresAt: new Date(Date.now() + 2 * DAY).toISOString() }), 'expiresAt'],
    ];
    for (const [what, body, path] of refused) {
      it(`refuses ${what} with 400 VALIDATION_FAILED naming ${path}, and creates nothing`, async () => {
        const { client, user } = await signUp(gw.url);
        const res = await client.post('/api/api-keys', { name: 'x', ...body() });
        expect(res.status).to.equal(400);
        expect(res.headers['content-type']).to.match(/application\/problem\+json/);
        expect(res.body.code).to.equal('VALIDATION_FAILED');
        expect(res.body.errors.map((e: { path: string }) => e.path)).to.include(path);
        expect(await keyCount(gw, user.id)).to.equal(0);
      });
    }

    it('the update route takes any instant for expiresAt, the past included, and null', async () => {
      const { client } = await signUp(gw.url);
      const key = (await client.post('/api/api-keys', { name: 'k' })).body;
      const soon = new Date(gw.clock.now().getTime() + 60_000).toISOString();
      const updated = await client.post('/api/auth/api-key/update', { keyId: key.id, expiresAt: soon });
      expect(updated.status).to.equal(200);
      expect(updated.body).to.include({ expiresAt: soon, state: 'active' });
      expect((await client.post('/api/auth/api-key/update', { keyId: key.id, expiresAt: null })).body.expiresAt).to.equal(null);
    });
  });

  describe('with apiKeys.maxLifetimeDays: 30', () => {
    for (const variant of ['A', 'B'] as const) {
      describe(`under Variant ${variant}`, () => {
        let gw: TestGateway;
        useGateway({ config: { apiKeys: { variant, maxLifetimeDays: 30 } } }, (g) => (gw = g));

        it('a create without expiry gets now + 30 days', async () => {
          const { client } = await signUp(gw.url);
          const now = gw.clock.now().getTime();
          const res = await client.post('/api/api-keys', { name: 'k' });
          expect(res.status).to.equal(201);
          expect(new Date(res.body.expiresAt).getTime() - now).to.be.within(30 * DAY - 5000, 30 * DAY + 5000);
        });

        it('a later expiry is refused with 400, an earlier one is kept', async () => {
          const { client, user } = await signUp(gw.url);
          const late = await client.post('/api/api-keys', { name: 'k', expiresIn: 31 * 86_400 });
          expect(late.status).to.equal(400);
          expect(late.body.code).to.equal('VALIDATION_FAILED');
          const lateAt = await client.post('/api/api-keys', { name: 'k', expiresAt: new Date(Date.now() + 31 * DAY).toISOString() });
          expect(lateAt.status).to.equal(400);
          expect(await keyCount(gw, user.id)).to.equal(0);
          expect((await client.post('/api/api-keys', { name: 'k', expiresIn: 7 * 86_400 })).status).to.equal(201);
        });

        it('update refuses null and an expiry past the limit', async () => {
          const { client } = await signUp(gw.url);
          const key = (await client.post('/api/api-keys', { name: 'k' })).body;
          for (const expiresAt of [null, new Date(Date.now() + 40 * DAY).toISOString()]) {
            const res = await client.post('/api/auth/api-key/update', { keyId: key.id, expiresAt });
            expect(res.status, String(expiresAt)).to.equal(400);
            expect(res.body.code).to.equal('VALIDATION_FAILED');
          }
          expect((await client.get(`/api/auth/api-key/get?id=${key.id}`)).body.expiresAt).to.equal(key.expiresAt);
        });
      });
    }
  });

  describe('expiresSoon in the list', () => {
    let gw: TestGateway;
    useGateway({}, (g) => (gw = g));

    it('marks keys that stop working within 7 days, and only those', async () => {
      const { client } = await signUp(gw.url);
      await client.post('/api/api-keys', { name: 'six days', expiresIn: 6 * 86_400 });
      await client.post('/api/api-keys', { name: 'eight days', expiresIn: 8 * 86_400 });
      await client.post('/api/api-keys', { name: 'never' });
      const soon = async () => Object.fromEntries(((await client.get('/api/api-keys')).body.keys as { name: string; expiresSoon: boolean }[]).map((k) => [k.name, k.expiresSoon]));
      expect(await soon()).to.deep.equal({ 'six days': true, 'eight days': false, never: false });
      gw.clock.advance(2 * DAY);
      try {
        expect(await soon()).to.deep.equal({ 'six days': true, 'eight days': true, never: false });
        gw.clock.advance(5 * DAY);
        // Already expired is not "soon": the state says expired.
        expect(await soon()).to.deep.equal({ 'six days': false, 'eight days': true, never: false });
      } finally {
        gw.clock.advance(-7 * DAY);
      }
    });
  });

  describe('configuration', () => {
    it('refuses a maxLifetimeDays that is not a positive integer', async () => {
      const { parseConfig } = await import('../../../src/config.ts');
      expect(() => parseConfig({ apiKeys: { maxLifetimeDays: 0 } })).to.throw(/maxLifetimeDays/);
      expect(parseConfig({ apiKeys: { variant: 'B', maxLifetimeDays: 90 } }).apiKeys).to.include({ maxLifetimeDays: 90 });
    });
  });
});
