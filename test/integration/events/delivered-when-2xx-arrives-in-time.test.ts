import { expect } from 'chai';
import { createServer, type ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUpAdmin, type Client } from '../../support/http.ts';
import { until } from '../../support/until.ts';
import { createSender } from '../../../src/services/events/send.ts';

// "A 2xx within 10 s is delivered": the status is the endpoint's answer. An endpoint that says 200
// at once and then sends the rest of its body slowly, past the attempt's deadline, has answered:
// its delivery is delivered (not retried and sent again), and the log keeps what arrived of the
// body. The deadline still bounds the attempt: the slow body is not waited for beyond it.

interface Trickler { url: string; posts: { headers: Record<string, unknown>; body: string }[]; close(): void }

/** Answers `status` with its headers at once, then a byte of body every `everyMs` for `forMs`. */
async function trickler(status: number, everyMs: number, forMs: number): Promise<Trickler> {
  const open = new Set<ServerResponse>();
  const posts: Trickler['posts'] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      posts.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      open.add(res);
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.write('accepted;');
      const started = Date.now();
      const timer = setInterval(() => {
        if (Date.now() - started >= forMs || res.destroyed) {
          clearInterval(timer);
          res.end();
          open.delete(res);
        } else res.write('.');
      }, everyMs);
      res.on('close', () => clearInterval(timer));
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    posts,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

describe('events: a 2xx that arrives within the deadline is delivered, however slow the rest of its body', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let admin: Client;
  const servers: Trickler[] = [];

  before(async () => {
    gw = await startTestGateway({ config: { webhooks: { allowPrivateAddresses: true, retrySchedule: ['1s'] } }, webhookPollMs: 50 });
    admin = (await signUpAdmin(gw, { name: 'Admin' })).client;
  });
  after(async () => {
    for (const s of servers) s.close();
    await gw?.close();
    await gw?.database.drop();
  });

  it('through the server: one attempt, delivered, signed, its answer logged as far as it arrived', async () => {
    const slow = await trickler(200, 250, 13_000);
    servers.push(slow);
    const ep = (await admin.post('/api/admin/webhooks', { url: slow.url, events: ['webhook.test'] })).body;
    const { eventId } = (await admin.post(`/api/admin/webhooks/${ep.id}/test`)).body;
    const deliveries = async () => (await admin.get(`/api/admin/webhooks/${ep.id}/deliveries`)).body.deliveries;
    await until('the attempt settled', async () => (await deliveries())[0]?.attempts.length >= 1, 20_000);
    const [d] = await deliveries();
    expect(d).to.include({ eventId, state: 'delivered' });
    expect(d.attempts).to.have.length(1);
    const [a] = d.attempts;
    expect(a).to.include({ status: 200, error: null });
    expect(a.response).to.match(/^accepted;\.+$/);
    // Bounded by the deadline: the body was not waited for to its end.
    expect(a.durationMs).to.be.within(9_000, 12_000);
    expect(slow.posts).to.have.length(1);
    const p = slow.posts[0]!;
    new Webhook(ep.secret).verify(p.body, {
      'webhook-id': String(p.headers['webhook-id']), 'webhook-timestamp': String(p.headers['webhook-timestamp']),
      'webhook-signature': String(p.headers['webhook-signature']),
    });
  });

  it('the sender: a slow 2xx body is ok, a slow 5xx body is a failure that names its status, both cut at the deadline', async () => {
    const ok = await trickler(202, 50, 5_000);
    const bad = await trickler(503, 50, 5_000);
    servers.push(ok, bad);
    const sender = createSender({ allowPrivateAddresses: true, deadlineMs: 1000 });
    try {
      const good = await sender.send(ok.url, {}, '{}');
      expect(good).to.include({ ok: true, status: 202, error: null });
      expect(good.response).to.match(/^accepted;\.*$/);
      expect(good.durationMs).to.be.below(3_000);
      const failed = await sender.send(bad.url, {}, '{}');
      expect(failed).to.include({ ok: false, status: 503, error: 'answered 503' });
      expect(failed.durationMs).to.be.below(3_000);
    } finally {
      await sender.close();
    }
  });
});
