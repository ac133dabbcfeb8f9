import { expect } from 'chai';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUp, type Client } from '../../support/http.ts';

// An upstream that refuses the connection answers 502 with a detail that says only that: the
// socket's error names the upstream's address, which the caller has no business learning. The
// operator's log has it, with the request id.

describe('a forwarded request whose upstream refuses the connection', () => {
  let gw: TestGateway;
  let session: Client;
  let port: number;
  before(async () => {
    // A port that was just free: nothing listens on it, so a connection is refused.
    const probe = net.createServer();
    await new Promise<void>((ok) => probe.listen(0, '127.0.0.1', ok));
    port = (probe.address() as AddressInfo).port;
    await new Promise<void>((ok) => probe.close(() => ok()));
    gw = await startTestGateway({ config: { upstream: { url: `http://127.0.0.1:${port}` } } });
    session = (await signUp(gw.url)).client;
  });
  after(async () => gw?.stop());

  it('then 502 BAD_GATEWAY with the public detail, and the log names the refusal and the address', async () => {
    const from = gw.logs.length;
    const res = await session.get('/api/projects');
    expect(res.status).to.equal(502);
    expect(res.body.code).to.equal('BAD_GATEWAY');
    expect(res.body.detail).to.equal('The upstream service did not answer. Try again shortly.');
    expect(JSON.stringify(res.body)).not.to.include(String(port));
    await gw.waitForLog(/upstream failed: ECONNREFUSED/, { from });
    const line = JSON.parse(gw.logs.slice(from).find((l) => l.includes('upstream failed'))!);
    expect(line.msg).to.include(`127.0.0.1:${port}`);
    expect(line.reqId).to.equal(res.headers['x-request-id']);
  });
});
