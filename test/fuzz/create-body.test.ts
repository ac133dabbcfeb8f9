import { expect } from 'chai';
import fc from 'fast-check';
import pg from 'pg';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { Client, signUp } from '../support/http.ts';
import { fuzzParams } from './support.ts';

// The create body, fuzzed through the real server: whatever members a client adds (another owner,
// a quota, permissions, ids, prototypes), the stored key has the caller as owner, the plan's quota,
// and exactly the scopes the schema's two booleans grant. Anything else is a 400 that stores nothing.

const SNEAKY = ['permissions', 'userId', 'user_id', 'owner', 'ownerId', 'requestQuota', 'request_quota', 'quota', 'remaining',
  'prefix', 'id', 'keyHash', 'enabled', 'expiresAt', 'metadata', 'scopes', 'role', '__proto__', 'constructor', 'refillAmount'];

const body = fc.record({
  name: fc.option(fc.oneof(fc.string({ maxLength: 70 }), { weight: 4, arbitrary: fc.constant('fuzz key') }, fc.integer()), { nil: undefined }),
  ai: fc.option(fc.oneof({ weight: 4, arbitrary: fc.boolean() }, fc.constant('true'), fc.constant(1)), { nil: undefined }),
  mcp: fc.option(fc.oneof({ weight: 4, arbitrary: fc.boolean() }, fc.constant('true'), fc.constant(1)), { nil: undefined }),
  // Most bodies carry no extra member, so that the grants of the schema itself get exercised.
  extra: fc.oneof({ weight: 3, arbitrary: fc.constant({}) }, fc.dictionary(fc.oneof(fc.constantFrom(...SNEAKY), fc.string({ maxLength: 8 })), fc.jsonValue({ maxDepth: 2 }), { minKeys: 1, maxKeys: 3 })),
}, { requiredKeys: ['extra'] });
type Body = typeof body extends fc.Arbitrary<infer T> ? T : never;

describe('fuzz: the key create body', function () {
  this.timeout(120_000);
  let gw: TestGateway;
  let session: Client;
  let userId: string;
  let db: pg.Client;
  before(async () => {
    // AI on, so that `ai: true` is a grant the schema allows, not a refusal.
    gw = await startTestGateway({ config: { ai: { enabled: true }, apiKeys: { enabled: true, variant: 'A', prefix: 'key_', maxKeysPerUser: 1000, maxCreatesPerDay: 100_000 } } });
    ({ client: session, user: { id: userId } } = await signUp(gw.url));
    db = new pg.Client({ connectionString: gw.database.url });
    await db.connect();
  });
  after(async () => {
    await db?.end();
    await gw?.stop();
  });

  const rows = async () => (await db.query<{ user_id: string; request_quota: number; permissions: Record<string, string[]> }>(
    'SELECT user_id, request_quota, permissions FROM apikeys ORDER BY created_at, id')).rows;

  it('never stores another owner, another quota, or a scope beyond ai and mcp set to true', async () => {
    const outcomes = { created: 0, refused: 0 };
    await fc.assert(fc.asyncProperty(body, async ({ name, ai, mcp, extra }) => {
      const sent: Record<string, unknown> = { ...extra };
      if (name !== undefined) sent.name = name;
      if (ai !== undefined) sent.ai = ai;
      if (mcp !== undefined) sent.mcp = mcp;
      // Written member by member: an own "__proto__" member must reach the server as a client sends it.
      const text = `{${Object.entries(sent).map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`;
      const before = await rows();
      const res = await session.post('/api/api-keys', text);
      const after = await rows();
      if (res.status !== 201) {
        expect(res.status, `${text} -> ${res.text}`).to.equal(400);
        if (process.env.FUZZ_DEBUG) console.log(text, res.text);
        expect(after, 'a refused create stored something').to.deep.equal(before);
        outcomes.refused++;
        return;
      }
      expect(after.length).to.equal(before.length + 1);
      const stored = after[after.length - 1]!;
      expect(stored.user_id).to.equal(userId);
      expect(stored.request_quota).to.equal(gw.config.defaultApiRateLimit);
      const expected: Record<string, string[]> = {};
      if (ai === true) expected.ai = ['access'];
      if (mcp === true) expected.mcp = ['access'];
      expect(stored.permissions, text).to.deep.equal(expected);
      expect(res.body.permissions).to.deep.equal(expected);
      outcomes.created++;
    }), {
      ...fuzzParams<[Body]>(60),
      // Both sides of the schema on every run, whatever the seed draws: each grant it allows, and
      // sneaky members beside a valid name.
      examples: [
        [{ name: 'fuzz key', extra: {} }], [{ name: 'fuzz key', ai: true, extra: {} }], [{ name: 'fuzz key', mcp: true, extra: {} }],
        [{ name: 'fuzz key', ai: true, mcp: false, extra: {} }], [{ name: 'fuzz key', ai: false, mcp: true, extra: {} }],
        [{ name: 'fuzz key', extra: { userId: 'someone-else' } }], [{ name: 'fuzz key', extra: { requestQuota: 1e9 } }],
        [{ name: 'fuzz key', ai: 'true', extra: {} }], [{ name: 'fuzz key', mcp: 1, extra: {} }], [{ extra: {} }],
      ],
    });
    // Both sides of the schema were exercised, or the property proved little.
    expect(outcomes.created, JSON.stringify(outcomes)).to.be.at.least(5);
    expect(outcomes.refused, JSON.stringify(outcomes)).to.be.at.least(5);
  });
});
