import { expect } from 'chai';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { useGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp, type Reply } from '../../support/http.ts';
import { expectOAuth401 as expectOAuth401At } from '../../support/oauth.ts';
import { connectMcp, createKey, initializeMessage, rpc } from './support.ts';

// Every refusal on /api/mcp is the same OAuth 401, so a client
// knows to go and find credentials, and the reason never tells a key's state apart from unknown.

describe('MCP server: refusals (the OAuth 401)', () => {
  let gw: TestGateway;
  useGateway({ config: { ai: { enabled: true }, plans: { free: {}, tiny: { apiRateLimit: 2 } } }, counters: 'postgres' }, (g) => (gw = g));

  const expectOAuth401 = (res: Reply) => expectOAuth401At(res, gw.url);

  /** The SDK's real client gives up on connect with the 401 and no auth provider to try. */
  async function expectClientRefused(headers: Record<string, string>) {
    let failure: unknown;
    try {
      const c = await connectMcp(gw.url, headers);
      await c.close();
    } catch (e) {
      failure = e;
    }
    expect(failure, 'connect should fail').to.be.instanceOf(StreamableHTTPError);
    expect((failure as StreamableHTTPError).code).to.equal(401);
  }

  /** Raw HTTP, in both header forms, and the SDK client, in both header forms. */
  async function expectRefusedEverywhere(key: string) {
    expectOAuth401(await rpc(new Client(gw.url).withKey(key), initializeMessage));
    expectOAuth401(await rpc(new Client(gw.url), initializeMessage, { authorization: `Bearer ${key}` }));
    await expectClientRefused({ 'x-api-key': key });
    await expectClientRefused({ authorization: `Bearer ${key}` });
  }

  async function workingKey(body: { mcp?: boolean; ai?: boolean } = {}) {
    const user = await signUp(gw.url);
    const created = await createKey(user.client, body);
    return { ...user, ...created };
  }

  it('a working key with MCP access is let in (the baseline the refusals are measured against)', async () => {
    const { key } = await workingKey();
    const res = await rpc(new Client(gw.url).withKey(key), initializeMessage);
    expect(res.status).to.equal(200);
    expect(res.body.result.serverInfo.name).to.equal('keygate');
  });

  describe('when no credentials are sent', () => {
    it('answers the OAuth 401, raw and to the SDK client', async () => {
      expectOAuth401(await rpc(new Client(gw.url), initializeMessage));
      await expectClientRefused({});
    });

    it('a Bearer header that is not a key (or not a Bearer) is refused the same way', async () => {
      expectOAuth401(await rpc(new Client(gw.url), initializeMessage, { authorization: 'Bearer key_notarealkey000000' }));
      expectOAuth401(await rpc(new Client(gw.url), initializeMessage, { authorization: 'Basic dXNlcjpwYXNz' }));
    });
  });

  describe('when the key was created without MCP access', () => {
    it('answers the OAuth 401 saying so, even for a key with AI access', async () => {
      const { key } = await workingKey({ mcp: false, ai: true });
      await expectRefusedEverywhere(key);
      const res = await rpc(new Client(gw.url).withKey(key), initializeMessage);
      expect(res.body.error_description).to.match(/MCP access/);
    });
  });

  describe('when the key is revoked', () => {
    it('answers the OAuth 401', async () => {
      const { client, key, id } = await workingKey();
      expect((await client.delete(`/api/api-keys/${id}`)).status).to.equal(204);
      await expectRefusedEverywhere(key);
    });
  });

  describe('when the key is disabled', () => {
    it('answers the OAuth 401', async () => {
      const { client, key, id } = await workingKey();
      expect((await client.post('/api/auth/api-key/update', { keyId: id, enabled: false })).status).to.equal(200);
      await expectRefusedEverywhere(key);
    });
  });

  describe('when the key has expired', () => {
    it('answers the OAuth 401', async () => {
      const { client, key, id } = await workingKey();
      // An expiry must be an hour ahead: set one, then move the clock past it.
      const soon = new Date(gw.clock.now().getTime() + 2 * 3600_000).toISOString();
      expect((await client.post('/api/auth/api-key/update', { keyId: id, expiresAt: soon })).status).to.equal(200);
      gw.clock.advance(3 * 3600_000);
      try {
        await expectRefusedEverywhere(key);
      } finally {
        gw.clock.advance(-3 * 3600_000);
      }
    });
  });

  describe('when the key has used its request quota', () => {
    it('lets the quota through, then answers the OAuth 401 with the rate-limit fields', async () => {
      const user = await signUp(gw.url);
      await gw.pool.query("UPDATE users SET plan = 'tiny' WHERE id = $1", [user.user.id]);
      const { key } = await createKey(user.client);
      const keyed = new Client(gw.url).withKey(key);
      const first = await rpc(keyed, initializeMessage);
      const second = await rpc(keyed, { jsonrpc: '2.0', id: 2, method: 'tools/list' });
      expect([first.status, second.status]).to.deep.equal([200, 200]);
      expect(second.headers['ratelimit-remaining']).to.equal('0');
      const third = await rpc(keyed, { jsonrpc: '2.0', id: 3, method: 'tools/list' });
      expectOAuth401(third);
      expect(third.body.error_description).to.match(/quota/);
      expect(third.headers['ratelimit-policy']).to.equal('"day";q=2;w=86400');
      expect(Number(third.headers['retry-after'])).to.be.greaterThan(0);
      await expectRefusedEverywhere(key);
    });
  });

  describe("when the key's owner is banned", () => {
    it('answers the OAuth 401', async () => {
      const { user, key } = await workingKey();
      await gw.pool.query('UPDATE users SET banned = true WHERE id = $1', [user.id]);
      await expectRefusedEverywhere(key);
    });
  });

  describe("when the key's owner deleted their account", () => {
    it('answers the OAuth 401', async () => {
      const { client, password, key } = await workingKey();
      expect((await client.post('/api/auth/delete-user', { password })).status).to.equal(204);
      await expectRefusedEverywhere(key);
    });
  });

  describe('when a signed-in session calls without a key', () => {
    it('answers the OAuth 401: the MCP server is for keys', async () => {
      const { client } = await signUp(gw.url);
      const res = await rpc(client, initializeMessage);
      expectOAuth401(res);
      expect(res.body.error_description).to.match(/API key/);
    });
  });

  it('the reason is the same for unknown, revoked, disabled and expired keys', async () => {
    const descriptions = new Set<string>();
    const revoked = await workingKey();
    await revoked.client.delete(`/api/api-keys/${revoked.id}`);
    const disabled = await workingKey();
    await disabled.client.post('/api/auth/api-key/update', { keyId: disabled.id, enabled: false });
    const expired = await workingKey();
    await expired.client.post('/api/auth/api-key/update', { keyId: expired.id, expiresAt: new Date(gw.clock.now().getTime() + 2 * 3600_000).toISOString() });
    const unknown = revoked.key.slice(0, -10) + 'AAAAAAAAAA';
    gw.clock.advance(3 * 3600_000);
    try {
      for (const key of [unknown, revoked.key, disabled.key, expired.key]) {
        descriptions.add((await rpc(new Client(gw.url).withKey(key), initializeMessage)).body.error_description);
      }
    } finally {
      gw.clock.advance(-3 * 3600_000);
    }
    expect([...descriptions]).to.have.length(1);
  });
});
