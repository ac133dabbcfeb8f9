import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { KeyService } from '../services/keys/service.ts';
import type { UserRecord } from '../services/accounts.ts';
import type { VerifiedKey } from '../services/keys/types.ts';
import { mcpToolRefusal } from '../policy/refusal.ts';
import { refusalError, type AppError } from '../errors.ts';
import { statusOfError } from '../http/problem.ts';
import type { OAuthGrantRef } from '../http/state.ts';
import { forwardTool, textResult, toolError, type ForwardContext, type ForwardedTool } from './forward.ts';

// One McpServer per HTTP request (stateless Streamable HTTP): the caller is fixed for the whole
// server, so every tool acts as the key's owner without reading anything from the MCP session.

export { BUILT_IN_TOOLS } from './tool-names.ts';

export interface ServerContext extends ForwardContext {
  caller: { kind: 'key'; user: UserRecord; key: VerifiedKey; grant?: OAuthGrantRef };
  keys: KeyService;
  tools: readonly ForwardedTool[];
  version: string;
  /** The gate's refusal for a path whose feature is off (http/gate.ts), as REST answers it. */
  closed: (path: string) => AppError | null;
}

const json = (value: unknown) => JSON.stringify(value, null, 2);

export function buildMcpServer(sx: ServerContext): McpServer {
  const server = new McpServer(
    { name: 'keygate', version: sx.version },
    { instructions: 'You act as the owner of the API key, in their personal scope (never an organization). Refused or failed calls come back as tool errors with the HTTP status and the reason.' },
  );
  const { user, key } = sx.caller;

  server.registerTool('whoami', {
    title: 'Who am I',
    description: 'The account this API key acts as, and the key itself (id, name, start, scopes, daily request quota).',
    annotations: { readOnlyHint: true, openWorldHint: false },
  }, () => {
    const grant = sx.caller.grant;
    const me = grant
      ? {
          user: { id: user.id, name: user.name, email: user.email },
          grant: { id: grant.id, clientId: grant.clientId, clientName: grant.clientName, scopes: key.scopes, requestQuota: { limit: key.requestQuota, window: 'day' } },
        }
      : {
          user: { id: user.id, name: user.name, email: user.email },
          key: { id: key.id, name: key.name, start: key.start, scopes: key.scopes, requestQuota: { limit: key.requestQuota, window: 'day' }, expiresAt: key.expiresAt?.toISOString() ?? null },
        };
    return textResult(json(me), me);
  });

  server.registerTool('list_api_keys', {
    title: 'List API keys',
    description: "The owner's API keys (metadata only, never a secret), newest first; revoked keys are left out.",
    annotations: { readOnlyHint: true, openWorldHint: false },
  }, async () => {
    // The same decisions as GET /api/api-keys over REST, in its order: the feature gate (keys off),
    // then the matrix, not this adapter, says who may list.
    const path = `${sx.apiPrefix}/api-keys`;
    const refused = mcpToolRefusal(sx.policy.current, sx.caller, 'GET', path, sx.apiPrefix);
    const err = sx.closed(path) ?? (refused ? refusalError(refused) : null);
    if (err) return toolError(`${statusOfError(err)} ${err.code}: ${err.detail}`);
    const list = { keys: await sx.keys.listKeys(user.id) };
    return textResult(json(list), list);
  });

  for (const tool of sx.tools) {
    const readOnly = tool.config.method === 'GET';
    server.registerTool(tool.config.name, {
      description: tool.config.description || `${tool.config.method} ${tool.config.path}`,
      inputSchema: tool.schema,
      annotations: { readOnlyHint: readOnly, destructiveHint: tool.config.method === 'DELETE', openWorldHint: false },
    }, (input) => forwardTool(tool, input, sx));
  }
  return server;
}
