import { expect } from 'chai';
import { startHostile, type Hostile } from './support.ts';

// A made-up query member on the usage route was reported as a body field ("(body) unknown field:
// x"), pointing a client at the wrong half of its request.

describe('hostile: usage query with members the route does not take', () => {
  let h: Hostile;
  let id: string;
  before(async () => {
    h = await startHostile();
    id = (await h.session.get('/api/api-keys')).body.keys[0].id as string;
  });
  after(async () => h?.stop());

  for (const query of ['x=1', 'days[]=3', 'days=7&__proto__=1']) {
    it(`when the query is "${query}", then it is 400 naming the query, not the body`, async () => {
      const res = await h.session.get(`/api/api-keys/${id}/usage?${query}`);
      expect(res.status).to.equal(400);
      expect(res.body.code).to.equal('VALIDATION_FAILED');
      expect(res.body.errors[0].path).to.equal('(query)');
      expect(res.body.detail).to.not.contain('(body)');
    });
  }
});
