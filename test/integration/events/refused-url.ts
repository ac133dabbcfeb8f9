import { expect } from 'chai';
import type { TestGateway } from '../../support/gateway.ts';
import type { Client } from '../../support/http.ts';

/**
 * Each of `refused` is answered 400 with `message` at registration, and nothing is written; an
 * endpoint made at `accepted` keeps its URL when changed to the first of them. Returns its id.
 */
export async function expectUrlRefused(gw: TestGateway, admin: Client, refused: string[], message: string, accepted: string): Promise<string> {
  for (const url of refused) {
    const r = await admin.post('/api/admin/webhooks', { url });
    expect(r.status, url).to.equal(400);
    expect(r.headers['content-type'], url).to.match(/^application\/problem\+json/);
    expect(r.body.errors, url).to.deep.equal([{ path: 'url', message }]);
  }
  expect((await gw.pool.query('SELECT count(*)::int AS n FROM webhook_endpoints')).rows[0].n).to.equal(0);
  const made = await admin.post('/api/admin/webhooks', { url: accepted });
  expect(made.status, made.text).to.equal(201);
  const patched = await admin.request('PATCH', `/api/admin/webhooks/${made.body.id}`, { url: refused[0] });
  expect(patched.status).to.equal(400);
  expect((await admin.get(`/api/admin/webhooks/${made.body.id}`)).body.url).to.equal(accepted);
  return made.body.id as string;
}
