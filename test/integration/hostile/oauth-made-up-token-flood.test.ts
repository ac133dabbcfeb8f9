import { expect } from 'chai';
import { connectApp, type ConnectedApp } from '../oauth/support.ts';
import { mintToken } from '../../../src/oauth/token-format.ts';
import { startHostile, type Hostile } from './support.ts';

// Anyone can make a value with keygate's token prefix and a checksum that holds. Each one sent as
// a Bearer on the MCP endpoint was looked up in PostgreSQL: 21,440 requests in 8 s made 19,229
// transactions. Made-up tokens now cost what made-up keys cost: about 100 lookups a second at
// most, none for one already found missing, and a real token still answers during the flood.

const PING = '{"jsonrpc":"2.0","id":1,"method":"ping"}';

describe('hostile: a flood of made-up OAuth tokens on the MCP endpoint', function () {
  this.timeout(120_000);
  let h: Hostile;
  let app: ConnectedApp;
  /** Statements that read the OAuth store's tokens, codes and grants. */
  let lookups = 0;
  before(async () => {
    h = await startHostile();
    app = await connectApp(h.gw.url, h.session, 'Flooded client');
    const pool = h.gw.pool;
    const query = pool.query.bind(pool);
    (pool as { query: unknown }).query = (...args: Parameters<typeof query>) => {
      const text = String(typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text);
      if (/FROM oauth_store\s+WHERE model = \$1 AND id_hash = \$2/.test(text)) lookups += 1;
      return query(...args);
    };
  });
  after(async () => h?.stop());

  const mcp = (token: string) => fetch(`${h.gw.url}/api/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: PING,
  });

  async function flood(tokens: string[], width = 50): Promise<number[]> {
    const statuses: number[] = [];
    let next = 0;
    await Promise.all(Array.from({ length: width }, async () => {
      while (next < tokens.length) {
        const res = await mcp(tokens[next++]!);
        await res.arrayBuffer();
        statuses.push(res.status);
      }
    }));
    return statuses;
  }

  it('costs no more than the lookup budget (100, which the test clock, standing still, never refills), and answers each 401', async () => {
    const before = lookups;
    const statuses = await flood(Array.from({ length: 1000 }, () => mintToken()));
    expect(statuses.filter((s) => s !== 401), 'answers other than 401').to.deep.equal([]);
    expect(lookups - before, 'lookups for 1000 made-up tokens').to.be.at.most(100);
  });

  it('one made-up token sent again and again is looked up once at most', async () => {
    const token = mintToken();
    const before = lookups;
    const statuses = await flood(Array.from({ length: 300 }, () => token), 10);
    expect(new Set(statuses)).to.deep.equal(new Set([401]));
    expect(lookups - before).to.be.at.most(1);
  });

  it('a real token, and one issued while the flood goes on, are still served', async () => {
    let stop = false;
    const flooding = (async () => {
      while (!stop) await flood(Array.from({ length: 200 }, () => mintToken()));
    })();
    try {
      expect((await mcp(app.accessToken)).status).to.equal(200);
      const fresh = await connectApp(h.gw.url, h.session, 'Client connected during the flood');
      expect((await mcp(fresh.accessToken)).status).to.equal(200);
    } finally {
      stop = true;
      await flooding;
    }
  });
});
