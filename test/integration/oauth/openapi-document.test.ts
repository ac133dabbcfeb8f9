import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client } from '../../support/http.ts';

// What tools that read an OpenAPI document need from /api/openapi.json: a server to call, every
// route the gateway answers itself (the discovery documents and the OAuth server among them), the
// MCP endpoint's request body (a validating proxy refuses a POST whose body is undescribed), and
// every tag it uses declared.

type Op = { tags: string[]; requestBody?: { required: boolean; content: Record<string, { schema: Record<string, unknown> }> }; responses: Record<string, unknown> };
type Doc = { servers?: { url: string }[]; tags: { name: string; description?: string }[]; paths: Record<string, Record<string, Op>> };

// A catch-all answers 404, or hands the request to the OAuth library, whose routes are described.
const CATCH_ALL = /\{\*rest\}/;

describe('the OpenAPI document as client tools read it', function () {
  this.timeout(30_000);
  let gw: TestGateway;
  let doc: Doc;
  before(async () => {
    gw = await startTestGateway();
    doc = (await new Client(gw.url).get('/api/openapi.json')).body;
  });
  after(async () => gw?.stop());

  it('describes every route the gateway serves itself, with each method: the discovery documents, OAuth and the pages included', () => {
    const toTemplate = (p: string) => p.replace(/:(\w+)/g, '{$1}');
    const missing = gw.routes
      .filter((r) => !CATCH_ALL.test(r.path))
      .flatMap((r) => r.methods.filter((m) => m !== 'HEAD').map((m) => [m.toLowerCase(), toTemplate(r.path)] as const))
      .filter(([method, path]) => !doc.paths[path]?.[method])
      .map(([method, path]) => `${method} ${path}`);
    expect(missing).to.deep.equal([]);
    expect(doc.paths['/sign-in']!.get!.tags).to.deep.equal(['pages']);
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/api/mcp', '/oauth/token', '/oauth/revoke']) {
      expect(doc.paths, path).to.have.property(path);
    }
  });

  it('POST /api/mcp takes a required JSON-RPC message as its body', () => {
    const body = doc.paths['/api/mcp']!.post!.requestBody!;
    expect(body.required).to.equal(true);
    const schema = body.content['application/json']!.schema as { properties: Record<string, unknown>; required: string[] };
    expect(schema.properties).to.include.keys('jsonrpc', 'method', 'id', 'params');
    expect(schema.required).to.deep.equal(['jsonrpc']);
    expect(doc.paths['/oauth/token']!.post!.requestBody!.content).to.have.property('application/x-www-form-urlencoded');
  });

  it('declares, with a description, every tag its operations use', () => {
    const used = new Set(Object.values(doc.paths).flatMap((ops) => Object.values(ops).flatMap((op) => op.tags)));
    const declared = new Map(doc.tags.map((t) => [t.name, t.description]));
    for (const tag of used) expect(declared.get(tag), tag).to.be.a('string').that.is.not.empty;
    expect(used).to.include('oauth');
  });

  it('names the origin it was asked at when publicUrl is not set, and does not let a shared cache keep it', async () => {
    const res = await new Client(gw.url).get('/api/openapi.json');
    expect(res.body.servers).to.deep.equal([{ url: gw.url }]);
    expect(res.headers['cache-control']).to.equal('no-store');
    const other = await new Client(gw.url).get('/api/openapi.json', { host: `localhost:${new URL(gw.url).port}` });
    expect(other.body.servers).to.deep.equal([{ url: `http://localhost:${new URL(gw.url).port}` }]);
  });

  it('names publicUrl when it is set', async () => {
    const pub = await startTestGateway({ config: { publicUrl: 'https://keygate.example/' } });
    try {
      const res = await new Client(pub.url).get('/api/openapi.json');
      expect(res.body.servers).to.deep.equal([{ url: 'https://keygate.example' }]);
    } finally {
      await pub.stop();
    }
  });
});
