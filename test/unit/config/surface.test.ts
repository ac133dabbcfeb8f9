import { expect } from 'chai';
import { keysOn, loadConfig } from '../../../src/config.ts';

// The gateway's surface is derived once from the file: every path and switch below is read from
// here by the routes, the pages, the MCP endpoint and the OpenAPI document.
describe('configuration: the surface', () => {
  const surface = (overrides: unknown) => loadConfig({ env: {}, overrides }).surface;

  it('by default: /api and /api/mcp, keys (Variant A) and the MCP server on, AI off', () => {
    expect(surface({})).to.deep.equal({
      paths: { api: '/api', mcp: '/api/mcp' },
      features: { apiKeys: true, ai: false, mcp: true, oauth: true },
      variant: 'A',
    });
  });

  it('follows apiPrefix, the variant and each switch', () => {
    expect(surface({ apiPrefix: '/v1' }).paths).to.deep.equal({ api: '/v1', mcp: '/v1/mcp' });
    expect(surface({ apiKeys: { variant: 'B' } }).variant).to.equal('B');
    expect(surface({ ai: { enabled: true } }).features.ai).to.equal(true);
    // OAuth tokens work on the MCP endpoint only, so OAuth goes with the MCP server.
    expect(surface({ mcpServer: { enabled: false } }).features).to.include({ mcp: false, oauth: false });
  });

  it('with keys off: the feature is off, the variant is A (whose policy is the default), keysOn is null', () => {
    const c = loadConfig({ env: {}, overrides: { apiKeys: { enabled: false } } });
    expect(c.surface.features.apiKeys).to.equal(false);
    expect(c.surface.variant).to.equal('A');
    expect(keysOn(c)).to.equal(null);
    expect(keysOn(loadConfig({ env: {}, overrides: {} }))?.prefix).to.equal('key_');
  });
});
