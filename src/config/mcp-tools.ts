import type { McpToolConfig } from './schema.ts';

// The automation tools an MCP client gets when the file declares none (an MCP client
// may manage automations as an `ai` key may).
export function defaultMcpTools(apiPrefix: string): McpToolConfig[] {
  const base = `${apiPrefix}/ai/automations`;
  const obj = (properties: Record<string, unknown>, required: string[] = []) => ({ type: 'object', properties, required });
  const id = { type: 'string', description: 'automation id' };
  const body = { name: { type: 'string' }, schedule: { type: 'string' }, prompt: { type: 'string' } };
  return [
    { name: 'list_automations', description: 'List your AI automations', method: 'GET', path: base, inputSchema: obj({}) },
    { name: 'create_automation', description: 'Create an AI automation', method: 'POST', path: base, inputSchema: obj(body, ['name']) },
    {
      name: 'update_automation', description: 'Update an AI automation', method: 'PATCH', path: `${base}/{id}`,
      inputSchema: obj({ id, ...body }, ['id']),
    },
    {
      name: 'delete_automation', description: 'Delete an AI automation', method: 'DELETE', path: `${base}/{id}`,
      inputSchema: obj({ id }, ['id']),
    },
    {
      name: 'run_automation', description: 'Run an AI automation now', method: 'POST', path: `${base}/{id}/run`,
      inputSchema: obj({ id }, ['id']),
    },
  ];
}
