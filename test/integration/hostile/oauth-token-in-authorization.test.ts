import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { connectApp, type ConnectedApp } from '../oauth/support.ts';
import { forwardedAuthorization, head, RawSocket, startHostile, type Hostile } from './support.ts';

// A token keygate issued is the MCP client's secret, whatever spelling the client (or an attacker
// replaying it) wraps it in: no Authorization value that holds one reaches the
// upstream. And a Bearer that is not keygate's must not cost a database lookup anywhere but
// /api/mcp: otherwise any anonymous caller buys one query per request.

const forwarded = forwardedAuthorization;

describe('hostile: an issued OAuth token in any Authorization spelling', function () {
  this.timeout(60_000);
  let h: Hostile;
  let app: ConnectedApp;
  before(async () => {
    h = await startHostile();
    app = await connectApp(h.gw.url, h.session, 'Leaky client');
  });
  after(async () => h?.stop());

  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const spellings: [string, (t: string) => string][] = [
    ['Bearer <t>', (t) => `Bearer ${t}`],
    ['Bearer <t> x', (t) => `Bearer ${t} x`],
    ['DPoP <t>', (t) => `DPoP ${t}`],
    ['the bare token', (t) => t],
    ['bEaReR with extra spaces', (t) => `bEaReR    ${t}   `],
    ['Basic with the token as password', (t) => `Basic ${b64(`client:${t}`)}`],
    ['a custom scheme with the token base64-wrapped', (t) => `Token ${b64(t)}`],
  ];
  for (const [name, spell] of spellings) {
    it(`never forwards the access token as "${name}"`, async () => {
      const { status, sent } = await forwarded(h, spell(app.accessToken));
      expect(status).to.equal(200);
      expect(sent, 'the upstream received the token').to.equal(undefined);
    });
  }

  it('never forwards the refresh token or the registration access token', async () => {
    expect(app.registrationAccessToken, 'registration answers a registration access token').to.be.a('string');
    for (const t of [app.refreshToken, app.registrationAccessToken]) {
      for (const spell of [(v: string) => `Bearer ${v}`, (v: string) => `DPoP ${v} x`, (v: string) => v]) {
        const { sent } = await forwarded(h, spell(t));
        expect(sent, 'the upstream received an issued token').to.equal(undefined);
      }
    }
  });

  it('forwards any other Authorization unchanged, one that merely starts like ours included', async () => {
    for (const value of ['Bearer upstream-secret', `Bearer kgo_${'A'.repeat(49)}`, 'DPoP abc.def', 'Basic Zm9vOmJhcg==']) {
      const { sent } = await forwarded(h, value);
      expect(sent).to.equal(value);
    }
  });

  it('a Bearer that is not keygate\'s costs no database query, off /api/mcp and on it', async () => {
    const pool = h.gw.pool;
    const queries: string[] = [];
    const query = pool.query.bind(pool);
    const connect = pool.connect.bind(pool);
    // Every statement the server sends through its pool, whether one-off or in a transaction.
    (pool as { query: unknown }).query = (...args: Parameters<typeof query>) => {
      queries.push(String(typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text));
      return query(...args);
    };
    (pool as { connect: unknown }).connect = () => {
      queries.push('connect');
      return connect();
    };
    try {
      for (let i = 0; i < 10; i++) {
        for (const path of ['/api/projects/x', '/api/api-keys', '/api/mcp']) {
          const s = await RawSocket.open(h.gw.url);
          const body = path === '/api/mcp' ? '{"jsonrpc":"2.0","id":1,"method":"ping"}' : '';
          s.write(head(path === '/api/mcp' ? 'POST' : 'GET', path, [['Host', h.host], ['Authorization', `Bearer ${randomBytes(32).toString('base64url')}`], ['Content-Type', 'application/json'], ['Accept', 'application/json, text/event-stream'], ['Content-Length', String(body.length)], ['Connection', 'close']]) + body);
          const res = await s.response(10_000);
          s.destroy();
          expect(res.status, path).to.equal(401);
        }
      }
    } finally {
      (pool as { query: unknown }).query = query;
      (pool as { connect: unknown }).connect = connect;
    }
    // The policy heartbeat runs on its own timer; only what a request would ask is counted.
    const asked = queries.filter((q) => /oauth|api_keys|users|sessions|connect/i.test(q));
    expect(asked, asked.join('\n')).to.deep.equal([]);
  });
});
