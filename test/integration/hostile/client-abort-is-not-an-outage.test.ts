import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { head, RawSocket } from './support.ts';

// A client that sends part of a declared body and hangs up was answered and counted as 503 "The
// database is unavailable", and logged at ERROR with a stack (ECONNRESET read as a store fault):
// anyone could fire the 5xx alerts. A client hang-up is logged at debug, counted under
// keygate_http_client_aborts_total, and never a 5xx.

describe('hostile: a client that hangs up mid-body', function () {
  this.timeout(30_000);
  let gw: TestGateway;
  let host: string;
  let cookie: string;
  before(async () => {
    gw = await startTestGateway();
    host = new URL(gw.url).host;
    const { client } = await signUp(gw.url);
    cookie = [...client.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  });
  after(async () => gw?.stop());

  async function metrics(): Promise<string> {
    const res = await new Client(gw.url).get('/metrics');
    return res.text;
  }
  const aborts = (text: string) => Number(/^keygate_http_client_aborts_total (\d+)/m.exec(text)?.[1] ?? 'NaN');

  async function abortMidBody(path: string, how: 'reset' | 'close', extra: [string, string][] = []) {
    const from = gw.logs.length;
    const s = await RawSocket.open(gw.url);
    const begun = new Promise<void>((ok) => gw.server.once('request', () => ok()));
    s.write(head('POST', path, [['Host', host], ['Content-Type', 'application/json'], ['Content-Length', '100'], ...extra]));
    s.write('{"email":"someone@exa');
    // The hang-up comes once the gateway has the request in hand, with 78 of its 100 bytes never sent.
    await begun;
    if (how === 'reset') s.socket.resetAndDestroy();
    else s.socket.destroy();
    await gw.waitForLog(/client closed the connection mid-request/, { from, timeoutMs: 5_000 });
  }

  for (const how of ['reset', 'close'] as const) {
    describe(`when a sign-in body is cut off by a ${how === 'reset' ? 'TCP reset' : 'plain close'}`, () => {
      it('then the abort counter goes up, no 5xx is counted and nothing is logged as an error or warning', async () => {
        const before = aborts(await metrics());
        await abortMidBody('/api/auth/sign-in/email', how);
        const after = await metrics();
        expect(aborts(after)).to.equal(before + 1);
        expect(after).to.not.match(/keygate_http_requests_total\{[^}]*status="5\d\d"/);
        const loud = gw.logs.filter((l) => (JSON.parse(l) as { level: number }).level >= 40);
        expect(loud).to.deep.equal([]);
      });
    });
  }

  describe('when a signed-in create body is cut off', () => {
    it('then it is an abort too, and no key was created', async () => {
      const before = aborts(await metrics());
      await abortMidBody('/api/api-keys', 'reset', [['Cookie', cookie]]);
      expect(aborts(await metrics())).to.equal(before + 1);
      const { rows } = await gw.pool.query<{ n: string }>('SELECT count(*) AS n FROM apikeys');
      expect(Number(rows[0]!.n)).to.equal(0);
    });
  });

  describe('after all of the above', () => {
    it('then the log says, at debug, that the client closed the connection', () => {
      const lines = gw.logs.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.msg === 'client closed the connection mid-request');
      expect(lines.length).to.be.at.least(3);
      for (const l of lines) expect(l.level).to.equal(20);
    });
  });
});
