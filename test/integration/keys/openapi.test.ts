import { expect } from 'chai';
import { z } from 'zod';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { createResponseChecker } from '../../support/openapi.ts';
import { createBodyA } from '../../../src/http/routes/api-keys.ts';

type Doc = { openapi: string; paths: Record<string, Record<string, { responses: Record<string, unknown>; requestBody?: { content: Record<string, { schema: Record<string, unknown> }> }; 'x-problem-codes': string[] }>> };

describe('GET /api/openapi.json', () => {
  let gw: TestGateway;
  let doc: Doc;
  before(async () => {
    gw = await startTestGateway();
    doc = (await new Client(gw.url).get('/api/openapi.json')).body;
  });
  after(async () => gw?.stop());

  it('is public, and is an OpenAPI 3.1 document', async () => {
    const res = await new Client(gw.url).get('/api/openapi.json');
    expect(res.status).to.equal(200);
    expect(res.headers['content-type']).to.match(/^application\/json/);
    expect(doc.openapi).to.equal('3.1.0');
  });

  it('describes every route the gateway serves itself under the prefix, with each method', () => {
    const toTemplate = (p: string) => p.replace(/:(\w+)/g, '{$1}');
    const missing = gw.routes
      .filter((r) => r.path.startsWith('/api/') && !r.path.startsWith('/api/mcp'))
      .flatMap((r) => r.methods.filter((m) => m !== 'HEAD').map((m) => `${m} ${r.path}`))
      .filter((line) => {
        const [method, path] = line.split(' ');
        return !doc.paths[toTemplate(path!)]?.[method!.toLowerCase()];
      });
    expect(missing).to.deep.equal([]);
    expect(doc.paths['/api/mcp']).to.have.property('post');
    expect(doc.paths['/healthz']).to.have.property('get');
  });

  it('takes its request bodies from the zod schemas that validate them', () => {
    const body = doc.paths['/api/api-keys']!.post!.requestBody!.content['application/json']!.schema;
    const { $schema: _s, ...fromZod } = z.toJSONSchema(createBodyA, { io: 'input' }) as Record<string, unknown>;
    expect(body).to.deep.equal(fromZod);
    expect((body.properties as Record<string, { minimum?: number }>).expiresIn!.minimum).to.equal(3600);
  });

  it('names the problem codes of each route', () => {
    const rotate = doc.paths['/api/api-keys/{id}/rotate']!.post!;
    expect(rotate['x-problem-codes']).to.include.members(['NOT_FOUND', 'API_KEY_DAILY_LIMIT', 'VALIDATION_FAILED', 'FORBIDDEN']);
    expect(rotate.responses).to.include.keys('201', '400', '403', '404', '429');
    expect(doc.paths['/api/auth/sign-up/email']!.post!['x-problem-codes']).to.include('EMAIL_TAKEN');
  });

  describe('the check every integration test answer goes through (test/support/openapi.ts)', () => {
    it('accepts the answers of a key’s life as the gateway sends them', async () => {
      const check = createResponseChecker(doc as never);
      const { client } = await signUp(gw.url);
      const created = await client.post('/api/api-keys', { name: 'k', expiresIn: 86_400 });
      const rotated = await client.post(`/api/api-keys/${created.body.id}/rotate`, {});
      const usage = await client.get(`/api/api-keys/${rotated.body.id}/usage?days=3`);
      const bad = await client.get(`/api/api-keys/${rotated.body.id}/usage?days=0`);
      const list = await client.get('/api/api-keys');
      for (const [path, method, res] of [
        ['/api/api-keys', 'POST', created], [`/api/api-keys/${created.body.id}/rotate`, 'POST', rotated],
        [`/api/api-keys/${rotated.body.id}/usage`, 'GET', usage], [`/api/api-keys/${rotated.body.id}/usage`, 'GET', bad], ['/api/api-keys', 'GET', list],
      ] as const) {
        expect(check({ method, path, status: res.status, contentType: res.headers['content-type']!, body: res.body })).to.equal(null);
      }
    });

    it('refuses an answer that drifted: a missing field, an extra field, an undeclared status or problem code', async () => {
      const check = createResponseChecker(doc as never);
      const { client } = await signUp(gw.url);
      const key = (await client.get('/api/api-keys')).body;
      const created = (await client.post('/api/api-keys', { name: 'k' })).body;
      const { expiresSoon: _dropped, ...missing } = created;
      const base = { method: 'POST', path: '/api/api-keys', status: 201, contentType: 'application/json' };
      expect(check({ ...base, body: missing })).to.match(/expiresSoon/);
      expect(check({ ...base, body: { ...created, keyHash: 'x' } })).to.match(/additional/);
      expect(check({ ...base, status: 418, body: key })).to.match(/418/);
      expect(check({ ...base, status: 409, contentType: 'application/problem+json', body: { type: 'x', title: 'x', status: 409, detail: 'x', code: 'EMAIL_TAKEN' } })).to.match(/409/);
      expect(check({ ...base, status: 400, contentType: 'application/problem+json', body: { type: 'x', title: 'x', status: 400, detail: 'x', code: 'EMAIL_TAKEN' } })).to.match(/code/);
    });
  });

  it('under Variant B the create body has no scopes', async () => {
    const b = await startTestGateway({ config: { apiKeys: { variant: 'B' } } });
    try {
      const docB: Doc = (await new Client(b.url).get('/api/openapi.json')).body;
      const props = docB.paths['/api/api-keys']!.post!.requestBody!.content['application/json']!.schema.properties as Record<string, unknown>;
      expect(Object.keys(props).sort()).to.deep.equal(['expiresAt', 'expiresIn', 'name']);
    } finally {
      await b.stop();
    }
  });
});
