import { expect } from 'chai';
import { loadConfig } from '../../../src/config.ts';
import { gate } from '../../../src/http/gate.ts';

// One gate decides what a feature that is off closes: the pipeline (app.ts) and the MCP server's
// list_api_keys both ask it.
describe('the feature gate', () => {
  const closedBy = (overrides: unknown) => gate(loadConfig({ env: {}, overrides }).surface);

  it('closes nothing while every feature is on', () => {
    const closed = closedBy({});
    for (const p of ['/api/api-keys', '/api/admin/api-keys/x', '/api/auth/api-key/list', '/api/mcp']) expect(closed(p)).to.equal(null);
  });

  it('with keys off: the key routes beneath the prefix, nothing that merely starts alike', () => {
    const closed = closedBy({ apiKeys: { enabled: false }, apiPrefix: '/v1' });
    for (const p of ['/v1/api-keys', '/v1/api-keys/1/rotate', '/v1/admin/api-keys', '/v1/auth/api-key/create']) expect(closed(p)?.code, p).to.equal('API_KEYS_DISABLED');
    for (const p of ['/v1/api-keysx', '/api/api-keys', '/v1/mcp', '/v1/auth/api-keys']) expect(closed(p), p).to.equal(null);
  });

  it('with the MCP server off: the endpoint and what lies beneath it answer 404', () => {
    const closed = closedBy({ mcpServer: { enabled: false } });
    expect(closed('/api/mcp')?.code).to.equal('NOT_FOUND');
    expect(closed('/api/mcp/x')?.code).to.equal('NOT_FOUND');
    expect(closed('/api/mcpx')).to.equal(null);
  });
});
