import { expect } from 'chai';
import { Client } from '../../support/http.ts';
import { startHostile, type Hostile } from './support.ts';

// One caller holds at most upstream.maxConcurrentPerCaller forwards at once, so one
// key (or one signed-in user) cannot take every upstream connection from everyone else.

describe('hostile: one caller holding many forwards at once', function () {
  this.timeout(30_000);
  let h: Hostile;
  before(async () => (h = await startHostile({ upstream: { maxConcurrentPerCaller: 3 } })));
  after(async () => h?.stop());

  describe('when a key already holds its 3 forwards', () => {
    it('then a 4th gets 429 TOO_MANY_CONCURRENT, other callers are served, and it forwards again once one ends', async () => {
      const key = new Client(h.gw.url).withKey(h.key);
      const held = [1, 2, 3].map((i) => key.get(`/api/hold/${i}`));
      await h.echo.untilHeld(3, 5_000);

      const fourth = await key.get('/api/projects');
      expect(fourth.status).to.equal(429);
      expect(fourth.body.code).to.equal('TOO_MANY_CONCURRENT');
      expect(fourth.headers['content-type']).to.match(/^application\/problem\+json/);

      // Another key of the same user, and the user's own session, are callers of their own.
      expect((await new Client(h.gw.url).withKey(h.otherKey).get('/api/projects')).status).to.equal(200);
      expect((await h.session.get('/api/projects')).status).to.equal(200);

      h.echo.releaseHeld();
      expect((await Promise.all(held)).map((r) => r.status)).to.deep.equal([200, 200, 200]);
      expect((await key.get('/api/projects')).status).to.equal(200);
    });
  });

  describe('when a signed-in user already holds 3 forwards', () => {
    it('then a 4th from the same user gets 429 TOO_MANY_CONCURRENT', async () => {
      const held = [1, 2, 3].map((i) => h.session.get(`/api/hold/s${i}`));
      await h.echo.untilHeld(3, 5_000);
      const fourth = await h.session.get('/api/projects');
      expect(fourth.status).to.equal(429);
      expect(fourth.body.code).to.equal('TOO_MANY_CONCURRENT');
      h.echo.releaseHeld();
      await Promise.all(held);
    });
  });
});
