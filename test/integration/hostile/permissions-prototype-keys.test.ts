import { expect } from 'chai';
import { startHostile, type Hostile } from './support.ts';

// JSON.parse keeps "__proto__" as an ordinary member, but copying it into a fresh object sets that
// object's prototype instead: the scope vanished and the create succeeded with less than asked and
// no word said. An undeclared scope is a 400 naming it, whatever its spelling.

describe('hostile: prototype keys in a create body\'s permissions', () => {
  let h: Hostile;
  before(async () => (h = await startHostile()));
  after(async () => h?.stop());

  for (const name of ['__proto__', 'constructor', 'toString']) {
    it(`when permissions names "${name}", then it is 400 VALIDATION_FAILED at permissions.${name} and no key is made`, async () => {
      const before = (await h.session.get('/api/api-keys')).body.keys.length as number;
      const res = await h.session.post('/api/api-keys', `{"name":"p","permissions":{"${name}":["access"]}}`);
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal('VALIDATION_FAILED');
      expect(res.body.errors.map((e: { path: string }) => e.path)).to.include(`permissions.${name}`);
      expect((await h.session.get('/api/api-keys')).body.keys.length).to.equal(before);
    });
  }

  it('when "__proto__" sits beside a declared scope, then the whole create is refused', async () => {
    const res = await h.session.post('/api/api-keys', '{"name":"p","permissions":{"mcp":["access"],"__proto__":["access"]}}');
    expect(res.status, res.text).to.equal(400);
    expect(res.body.code).to.equal('VALIDATION_FAILED');
  });

  it('when "__proto__" hides deep in a body nested as far as 1 MiB allows, then the answer is still a 400, not a crash', async () => {
    const depth = 150_000;
    const nested = `${'{"a":'.repeat(depth)}{"__proto__":1}${'}'.repeat(depth)}`;
    const res = await h.session.post('/api/api-keys', `{"name":"p","permissions":${nested}}`);
    expect(res.status).to.equal(400);
    expect(res.body.code).to.equal('VALIDATION_FAILED');
    expect(res.body.errors[0].path).to.equal('permissions.….a.__proto__');
  });
});
