import {
  McpServer, createMcpHandler, isInitializeRequest, isLegacyRequest, WebStandardStreamableHTTPServerTransport, type AuthInfo,
} from '@modelcontextprotocol/server';
import type { KeyService } from '../services/keys/service.ts';
import { mcpToolRefusal } from '../policy/refusal.ts';
import { refusalError, type AppError } from '../errors.ts';
import { statusOfError } from '../http/problem.ts';
import type { Caller } from '../http/state.ts';
import { forwardTool, textResult, toolError, type ForwardContext, type ForwardedTool } from './forward.ts';

// The only module that knows the SDK's server. One McpServer per HTTP request, for either revision:
// the caller is fixed for the whole server, so every tool acts as the key's owner without reading
// anything from an MCP session. A 2025-era client is handed a session id all the same, as clients of
// that revision expect one: an id any instance can check, that holds no state (services/mcp-session-ids.ts).

export { BUILT_IN_TOOLS } from './tool-names.ts';

/** The MCP revisions /api/mcp answers: 2025-era clients (initialize, stateless) and 2026-07-28 (per-request _meta). */
export const SERVED_REVISIONS = ['2025-11-25', '2026-07-28'] as const;

export interface ServerContext extends ForwardContext {
  caller: Extract<Caller, { kind: 'key' | 'grant' }>;
  keys: KeyService;
  tools: readonly ForwardedTool[];
  version: string;
  /** The gate's refusal for a path whose feature is off (http/gate.ts), as REST answers it. */
  closed: (path: string) => AppError | null;
}

const json = (value: unknown) => JSON.stringify(value, null, 2);

// The SDK hands the AuthInfo it was given to the factory untouched; the context rides beside it,
// keyed by that object, so nothing of the caller is serialised into a place the SDK might echo.
const contexts = new WeakMap<AuthInfo, ServerContext>();

export function buildMcpServer(sx: ServerContext): McpServer {
  const server = new McpServer(
    { name: 'keygate', version: sx.version },
    {
      instructions: 'You act as the owner of the API key, in their personal scope (never an organization).'
        + ' Refused or failed calls come back as tool errors with the HTTP status and the reason.',
      // keygate has no resources or prompts: saying so with empty lists is a truthful answer,
      // where leaving the capabilities out makes clients that ask anyway see "method not found".
      capabilities: { resources: {}, prompts: {} },
      // 2026-07-28 answers carry caching hints: the tool list depends on the key (private), and
      // may change with a config reload, so it is kept briefly.
      cacheHints: { 'tools/list': { ttlMs: 60_000, cacheScope: 'private' }, 'server/discover': { ttlMs: 300_000, cacheScope: 'private' } },
    },
  );
  const { caller } = sx;
  const { user } = caller;

  server.registerTool('whoami', {
    title: 'Who am I',
    description: 'The account this API key acts as, and the key itself (id, name, start, scopes, daily request quota).',
    annotations: { readOnlyHint: true, openWorldHint: false },
  }, () => {
    const me = caller.kind === 'grant'
      ? {
          user: { id: user.id, name: user.name, email: user.email },
          grant: {
            id: caller.grant.id,
            clientId: caller.grant.clientId,
            clientName: caller.grant.clientName,
            scopes: Object.keys(caller.grant.permissions),
            requestQuota: { limit: caller.grant.requestQuota, window: 'day' },
          },
        }
      : {
          user: { id: user.id, name: user.name, email: user.email },
          key: {
            id: caller.key.id,
            name: caller.key.name,
            start: caller.key.start,
            scopes: caller.key.scopes,
            requestQuota: { limit: caller.key.requestQuota, window: 'day' },
            expiresAt: caller.key.expiresAt?.toISOString() ?? null,
          },
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

/** The session ids of this caller: a new one, or whether one the client sent is theirs. */
export interface CallerSessionIds { issue(): Promise<string>; holds(id: string): Promise<boolean> }

/** What one request to /api/mcp hands the SDK: the web Request, its parsed body, the caller's context and session ids. */
export interface McpExchange { request: Request; parsedBody: unknown; sx: ServerContext; sessionIds: CallerSessionIds }

const fromAuth = (authInfo: AuthInfo | undefined): ServerContext => {
  const sx = authInfo && contexts.get(authInfo);
  if (!sx) throw new Error('MCP request without its caller context');
  return sx;
};

// The 2026-07-28 leg: the SDK checks the revision, the standard headers and the _meta envelope,
// and answers their errors with the request's id. 2025-era messages are not its business here.
const modern = createMcpHandler(({ authInfo }) => buildMcpServer(fromAuth(authInfo)), { legacy: 'reject' });

const requestId = (body: unknown) => {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
};

// The 2025-era leg: Streamable HTTP answered as one JSON body; the SDK's own fallback would answer
// an event stream instead. An initialize gets a session id (the SDK puts it in Mcp-Session-Id); a
// later message that brings one is served only if it is this caller's, else 404 tells the client
// to initialize again, as the transport says. A message without one is served as before.
async function legacy({ request, parsedBody, sx, sessionIds }: McpExchange): Promise<Response> {
  let sessionId: string | undefined;
  if (isInitializeRequest(parsedBody)) sessionId = await sessionIds.issue();
  else {
    const claimed = request.headers.get('mcp-session-id');
    if (claimed !== null && !(await sessionIds.holds(claimed))) {
      const error = { code: -32001, message: 'Session not found: initialize again.' };
      return Response.json({ jsonrpc: '2.0', error, id: requestId(parsedBody) }, { status: 404 });
    }
  }
  const server = buildMcpServer(sx);
  // With a generator the transport would want every later message to carry the id it made itself;
  // only the initialize is answered by one, and only to name the id.
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: sessionId === undefined ? undefined : () => sessionId,
    enableJsonResponse: true,
  });
  await server.connect(transport);
  try {
    return await transport.handleRequest(request, { parsedBody });
  } finally {
    void transport.close();
    void server.close();
  }
}

/** Answers one MCP message of either revision. */
export async function serveMcp(exchange: McpExchange): Promise<Response> {
  if (await isLegacyRequest(exchange.request, exchange.parsedBody)) return legacy(exchange);
  const { caller } = exchange.sx;
  const authInfo: AuthInfo = { token: '', clientId: caller.kind === 'grant' ? caller.grant.id : caller.key.id, scopes: ['mcp'] };
  contexts.set(authInfo, exchange.sx);
  return modern.fetch(exchange.request, { authInfo, parsedBody: exchange.parsedBody });
}
