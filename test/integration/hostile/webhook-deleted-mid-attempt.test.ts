import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUpAdmin, type Client } from '../../support/http.ts';
import { until } from '../../support/until.ts';

// An admin deletes an endpoint while an attempt to it is in flight (an endpoint that answers
// slowly makes that easy). The attempt's outcome has nowhere to go: that is the delete doing its
// job, not a failure of the sender to warn an operator about.

describe('hostile: a webhook endpoint deleted while an attempt to it is in flight', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let admin: Client;
  let endpoint: Server;
  let arrived = 0;

  before(async () => {
    endpoint = createServer((req, res) => {
      req.resume();
      arrived++;
      setTimeout(() => res.writeHead(500).end('slow no'), 800);
    });
    await new Promise<void>((ok) => endpoint.listen(0, '127.0.0.1', () => ok()));
    gw = await startTestGateway({ config: { webhooks: { allowPrivateAddresses: true } }, webhookPollMs: 50 });
    const s = await signUpAdmin(gw, { name: 'Admin' });
    admin = s.client;
  });
  after(async () => {
    await gw?.close();
    await gw?.database.drop();
    endpoint?.closeAllConnections();
    endpoint?.close();
  });

  it('the attempt ends quietly: no warning, nothing left behind', async () => {
    const url = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/hook`;
    const ep = (await admin.post('/api/admin/webhooks', { url, events: ['webhook.test'] })).body;
    expect((await admin.post(`/api/admin/webhooks/${ep.id}/test`)).status).to.equal(202);
    await until('the attempt is in flight', () => arrived === 1, 5000);
    const from = gw.logs.length;
    expect((await admin.request('DELETE', `/api/admin/webhooks/${ep.id}`)).status).to.equal(204);
    await gw.waitForLog(/webhook attempt|could not be recorded/, { from, timeoutMs: 5000 });
    const warnings = gw.logs.slice(from).filter((l) => /"level":(40|50)/.test(l));
    expect(warnings, warnings.join('\n')).to.deep.equal([]);
    const { rows } = await gw.pool.query('SELECT count(*)::int AS n FROM webhook_attempts WHERE endpoint_id = $1', [ep.id]);
    expect(rows[0].n).to.equal(0);
  });
});
