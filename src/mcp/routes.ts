import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import Router from '@koa/router';
import { z } from 'zod';
import { packageRoot, type Config } from '../config.ts';
import type { KeyService } from '../services/keys/service.ts';
import type { McpSessionIds, SessionHolder } from '../services/mcp-session-ids.ts';
import { AppError } from '../errors.ts';
import type { PolicyHolder } from '../policy/engine.ts';
import type { Upstream } from '../http/proxy/upstream.ts';
import { callerSlots, type CallerSlots } from '../http/proxy/concurrency.ts';
import type { Caller, GatewayContext, GatewayState } from '../http/state.ts';
import { parseBody } from '../http/body.ts';
import { webRequest, writeResponse } from './bridge.ts';
import { prepareTool, type ForwardedTool } from './forward.ts';
import { BUILT_IN_TOOLS } from './tool-names.ts';
import { publicBase } from './refusal.ts';
import { featureOff, gate } from '../http/gate.ts';
import { serve } from '../http/operation.ts';
import { mcpOperations } from '../http/mcp-operations.ts';
import type { OAuthHolder } from '../oauth/holder.ts';

export interface McpDeps {
  config: Config; keys: KeyService; policy: PolicyHolder; upstream: Upstream | null; oauth?: OAuthHolder;
  /** The session ids 2025-era clients get from initialize, checkable by every instance. */
  sessionIds: McpSessionIds;
  /** The REST forwarder's slots, so one caller's REST and MCP forwards share one bound; default: own. */
  slots?: CallerSlots;
}

// The MCP SDK (about 20 MB resident) is loaded with the first MCP request, not at start: a gateway
// that serves only REST never carries it.
let sdk: Promise<typeof import('./server.ts')> | null = null;
const loadSdk = () => (sdk ??= import('./server.ts'));

/** Whom a session id is bound to: the OAuth grant when the caller came with a token, else the key. */
const holderOf = (caller: Extract<Caller, { kind: 'key' | 'grant' }>): SessionHolder =>
  caller.kind === 'grant'
    ? { kind: 'grant', id: caller.grant.id, userId: caller.user.id }
    : { kind: 'key', id: caller.key.id, userId: caller.user.id };

const SESSION_HEADER = 'mcp-session-id';

const version = (JSON.parse(readFileSync(resolve(packageRoot, 'package.json'), 'utf8')) as { version: string }).version;

function prepareTools(config: Config): ForwardedTool[] {
  const seen = new Set<string>(BUILT_IN_TOOLS);
  return config.mcpServer.tools.map((tool) => {
    if (seen.has(tool.name)) throw new Error(`mcpServer.tools "${tool.name}": the name is already taken by another tool`);
    seen.add(tool.name);
    return prepareTool(tool, config.apiPrefix);
  });
}

/** `/api/mcp` (MCP Streamable HTTP; no instance keeps a session) and the RFC 9728 metadata that points clients at it. */
export function mcpRoutes(deps: McpDeps): Router<GatewayState> {
  const { config, keys, policy, upstream, oauth, sessionIds, slots = callerSlots(config.upstream.maxConcurrentPerCaller) } = deps;
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  const mcpPath = config.surface.paths.mcp;
  if (!config.surface.features.mcp) {
    // With the MCP server off, http/gate.ts answers 404 to every caller before anyone is resolved.
    const off = () => {
      throw featureOff('mcp');
    };
    // Registered so that a key that still holds MCP access is answered here, never forwarded.
    router.all(mcpPath, off).all(`${mcpPath}/{*rest}`, off);
    return router;
  }
  // Every configured tool forwards: with no upstream none could answer, so none is offered (the
  // configuration is still checked, so a mistake shows before an upstream is added).
  const configured = prepareTools(config);
  const tools = upstream ? configured : [];
  const closed = gate(config.surface);

  const metadata = (ctx: GatewayContext) => {
    // With OAuth on, the issuer names the resource its tokens are for, whatever Host was asked.
    const issuer = oauth?.issuer ?? null;
    const base = issuer ?? publicBase(ctx, config.publicUrl);
    // Without publicUrl the answer may be built from this request's Host: publicly cached, one
    // spoofed Host would poison the answer every client of that cache gets.
    ctx.set('Cache-Control', config.publicUrl ? 'public, max-age=3600' : 'no-store');
    ctx.body = {
      resource: `${base}${mcpPath}`,
      ...(issuer ? { authorization_servers: [issuer] } : {}),
      scopes_supported: ['mcp'],
      bearer_methods_supported: ['header'],
      resource_name: 'keygate MCP server',
      resource_documentation: `${base}/settings/developers`,
    };
  };
  const ops = mcpOperations(config.surface);
  serve(router, ops.metadata, metadata);
  serve(router, ops.metadataAtPath, metadata);

  serve(router, ops.endpoint, async (ctx) => {
    const caller = ctx.state.caller;
    // The policy refuses sessions here; this is the second lock, in the OAuth form (problems in app.ts).
    if (caller.kind !== 'key' && caller.kind !== 'grant') {
      throw new AppError('FORBIDDEN', 'The MCP server takes an API key with MCP access, not a session.');
    }
    const body = await parseBody(ctx, z.unknown());
    // One message per request: a JSON-RPC batch would run many tool calls for one unit of quota.
    if (Array.isArray(body)) {
      throw new AppError('VALIDATION_FAILED', 'JSON-RPC batches are not accepted here; send one message per request.');
    }
    const { serveMcp } = await loadSdk();
    const sx = {
      caller, keys, policy, upstream, tools, version, apiPrefix: config.apiPrefix, slots, closed,
      forwarded: { 'x-forwarded-for': ctx.ip, 'x-forwarded-host': ctx.host, 'x-forwarded-proto': ctx.protocol },
    };
    // A client that goes away aborts the exchange (and any tool call it started).
    const abort = new AbortController();
    ctx.res.on('close', () => {
      if (!ctx.res.writableFinished) abort.abort();
    });
    const holder = holderOf(caller);
    const callerIds = { issue: () => sessionIds.issue(holder), holds: (id: string) => sessionIds.holds(id, holder) };
    const response = await serveMcp({ request: webRequest(ctx, abort.signal), parsedBody: body, sx, sessionIds: callerIds });
    await writeResponse(ctx, response);
  });

  // No server-to-client stream is offered (the SDK client takes 405 on GET as that), and a session
  // cannot be ended: it is an id the fleet can check, not a state it keeps. A session id that is not
  // the caller's is still 404 here, as on POST, so a client learns to initialize again.
  const postOnly = async (ctx: GatewayContext) => {
    const claimed = ctx.get(SESSION_HEADER);
    const caller = ctx.state.caller;
    if (claimed && (caller.kind === 'key' || caller.kind === 'grant') && !(await sessionIds.holds(claimed, holderOf(caller)))) {
      throw new AppError('NOT_FOUND', 'No such MCP session: initialize again.');
    }
    const detail = 'Send JSON-RPC messages with POST; this MCP server offers no stream and keeps no session to end.';
    throw new AppError('METHOD_NOT_ALLOWED', detail, {}, { allowedMethods: ['POST'] });
  };
  serve(router, ops.stream, postOnly);
  serve(router, ops.end, postOnly);

  // The endpoint is exactly `/api/mcp`; nothing beneath it is forwarded upstream.
  router.all(`${mcpPath}/{*rest}`, () => {
    throw new AppError('NOT_FOUND', 'No such route. The MCP endpoint is exactly ' + mcpPath + '.');
  });
  return router;
}
