import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUp } from '../../support/http.ts';

// `{ mcp: false, permissions: { mcp: ["access"] } }` made a key with MCP access. A
// client that shows the `mcp` flag told its user "no MCP" about a key an agent could use. When the
// shorthand and permissions disagree, nothing is made.

describe('hostile: a create body whose ai/mcp flags contradict its permissions', () => {
  let gw: TestGateway;
  before(async () => (gw = await startTestGateway({ config: { ai: { enabled: true } } })));
  after(async () => gw?.stop());

  const count = async (userId: string) => (await gw.pool.query('SELECT count(*)::int AS n FROM apikeys WHERE user_id = $1', [userId])).rows[0].n as number;

  const contradictions: [string, Record<string, unknown>][] = [
    ['mcp', { mcp: false, permissions: { mcp: ['access'] } }],
    ['ai', { ai: false, permissions: { ai: ['access'] } }],
    ['mcp', { mcp: false, permissions: { mcp: [] } }],
    ['mcp', { mcp: true, permissions: { mcp: [] } }],
    ['ai', { ai: false, mcp: true, permissions: { ai: ['access'], mcp: ['access'] } }],
  ];
  for (const [field, body] of contradictions) {
    it(`when the body is ${JSON.stringify(body)}, then it is 400 VALIDATION_FAILED naming ${field} and no key is made`, async () => {
      const { client, user } = await signUp(gw.url);
      const res = await client.post('/api/api-keys', { name: 'x', ...body });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal('VALIDATION_FAILED');
      expect(res.body.errors.map((e: { path: string }) => e.path)).to.include(field);
      expect(await count(user.id)).to.equal(0);
    });
  }

  const agreements: [Record<string, unknown>, { ai: boolean; mcp: boolean }][] = [
    [{ mcp: true, permissions: { mcp: ['access'] } }, { ai: false, mcp: true }],
    [{ mcp: false, permissions: {} }, { ai: false, mcp: false }],
    [{ ai: true, mcp: false, permissions: { ai: ['access'] } }, { ai: true, mcp: false }],
    [{ permissions: { mcp: ['access'] } }, { ai: false, mcp: true }],
  ];
  for (const [body, expected] of agreements) {
    it(`when the body is ${JSON.stringify(body)}, then the key is made with ai ${expected.ai} and mcp ${expected.mcp}`, async () => {
      const { client } = await signUp(gw.url);
      const res = await client.post('/api/api-keys', { name: 'x', ...body });
      expect(res.status, res.text).to.equal(201);
      expect(res.body).to.include(expected);
    });
  }
});
