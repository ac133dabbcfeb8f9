import { expect } from 'chai';
import { loadConfig } from '../../../src/config.ts';
import { mcpRoutes, type McpDeps } from '../../../src/mcp/routes.ts';

// A tool the gateway cannot serve faithfully stops the start with a reason naming the tool, rather
// than failing on an agent's first call. Only the config is read while the routes are built.

const build = (tools?: unknown[]) => () => {
  const config = loadConfig({ env: {}, overrides: tools ? { mcpServer: { tools } } : {} });
  return mcpRoutes({ config, keys: null as unknown as McpDeps['keys'], policy: null as unknown as McpDeps['policy'], upstream: null, sessionIds: null as unknown as McpDeps['sessionIds'] });
};

describe('MCP server: configured tools are checked at start', () => {
  const cases: [string, unknown[], RegExp][] = [
    ['a path outside the API prefix', [{ name: 'health', method: 'GET', path: '/healthz' }], /"health": path must be under the API prefix \/api/],
    ['an input schema that is not an object', [{ name: 'n', method: 'GET', path: '/api/n', inputSchema: { type: 'string' } }], /"n": inputSchema must describe an object/],
    ['an unusable input schema', [{ name: 'r', method: 'GET', path: '/api/r', inputSchema: { $ref: '#/nowhere' } }], /"r": inputSchema is not a usable JSON Schema/],
    ['a built-in tool name', [{ name: 'whoami', method: 'GET', path: '/api/me' }], /"whoami": the name is already taken/],
    ['a name used twice', [{ name: 'a', method: 'GET', path: '/api/a' }, { name: 'a', method: 'POST', path: '/api/a' }], /"a": the name is already taken/],
  ];
  for (const [what, tools, reason] of cases) {
    it(`refuses ${what}`, () => {
      expect(build(tools)).to.throw(reason);
    });
  }

  it('accepts the default automation tools and a tool with placeholders', () => {
    expect(build([{ name: 'get', method: 'GET', path: '/api/things/{id}', inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } }])).to.not.throw();
    expect(build()).to.not.throw();
  });
});
