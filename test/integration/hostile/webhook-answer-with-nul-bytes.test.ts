import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUpAdmin, type Client } from '../../support/http.ts';
import { until } from '../../support/until.ts';

// A webhook endpoint answering with bytes PostgreSQL text will not hold (NUL) must not make its
// attempts unrecordable: the delivery log keeps what it can, and the retry schedule runs as usual.

describe('hostile: a webhook endpoint answering with NUL bytes', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let admin: Client;
  let endpoint: Server;
  let hits = 0;

  before(async () => {
    endpoint = createServer((sock) => {
      sock.on('error', () => {});
      sock.once('data', () => {
        hits++;
        sock.end('HTTP/1.1 500 Nope\r\ncontent-length: 6\r\nconnection: close\r\n\r\nno\u0000way');
      });
    });
    await new Promise<void>((ok) => endpoint.listen(0, '127.0.0.1', () => ok()));
    const config = { webhooks: { allowPrivateAddresses: true, retrySchedule: ['1s'], disableAfter: '1h' } };
    gw = await startTestGateway({ config, webhookPollMs: 50 });
    const s = await signUpAdmin(gw, { name: 'Admin' });
    admin = s.client;
  });
  after(async () => {
    await gw?.close();
    await gw?.database.drop();
    endpoint?.close();
  });

  it('each attempt is logged (NUL shown as U+FFFD) and the delivery fails after its schedule', async () => {
    const url = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/hook`;
    const ep = (await admin.post('/api/admin/webhooks', { url, events: ['webhook.test'] })).body;
    expect((await admin.post(`/api/admin/webhooks/${ep.id}/test`)).status).to.equal(202);
    const log = async () => (await admin.get(`/api/admin/webhooks/${ep.id}/deliveries`)).body.deliveries[0];
    await until('the delivery failed', async () => (await log())?.state === 'failed', 10_000);
    const d = await log();
    expect(d.attempts.map((a: { status: number; response: string }) => [a.status, a.response])).to.deep.equal([
      [500, 'no\ufffdway'], [500, 'no\ufffdway'],
    ]);
    expect(hits).to.equal(2);
  });
});
