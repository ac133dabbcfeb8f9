import { STATUS_CODES } from 'node:http';
import { z } from 'zod';
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { McpToolConfig } from '../config.ts';
import { AppError, refusalError } from '../errors.ts';
import { canonicalizePath } from '../http/canonical-path.ts';
import { statusOfError } from '../http/problem.ts';
import type { PolicyHolder } from '../policy/engine.ts';
import { mcpToolRefusal } from '../policy/refusal.ts';
import { permissionNames } from '../policy/scopes.ts';
import { identityHeaders, textOf, type Upstream } from '../http/proxy/upstream.ts';
import type { CallerSlots, Release } from '../http/proxy/concurrency.ts';
import type { Caller } from '../http/state.ts';

// The tools of `mcpServer.tools`: each call becomes one upstream request made as the key's owner,
// decided by the same enforcer as REST. Every way it can go wrong comes back as a tool result with
// isError, so an agent reads the status and the reason instead of seeing the transport fail.

export type ToolInput = Record<string, unknown>;

/** A configured tool, checked once at start: its input schema as zod and its path placeholders. */
export interface ForwardedTool {
  config: McpToolConfig;
  schema: z.ZodObject;
  placeholders: string[];
}

export interface ForwardContext {
  caller: Caller;
  policy: PolicyHolder;
  upstream: Upstream | null;
  apiPrefix: string;
  /** x-forwarded-* of the MCP request, as the REST forwarder sends them. */
  forwarded: Record<string, string>;
  /** The same per-caller slots REST forwards take (upstream.maxConcurrentPerCaller). */
  slots: CallerSlots;
}

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

export const textResult = (text: string, structured?: unknown): CallToolResult => ({
  content: [{ type: 'text', text }],
  ...(structured && typeof structured === 'object' && !Array.isArray(structured)
    ? { structuredContent: structured as Record<string, unknown> }
    : {}),
});

export const toolError = (text: string): CallToolResult => ({ content: [{ type: 'text', text }], isError: true });

const refusedResult = (err: AppError) => toolError(`${statusOfError(err)} ${err.code}: ${err.detail}`);

/** Throws on a tool the gateway could not serve faithfully, so a bad config stops the start. */
export function prepareTool(tool: McpToolConfig, apiPrefix: string): ForwardedTool {
  const where = `mcpServer.tools "${tool.name}"`;
  if (!tool.path.startsWith(apiPrefix + '/')) throw new Error(`${where}: path must be under the API prefix ${apiPrefix}`);
  let schema: z.ZodType;
  try {
    schema = z.fromJSONSchema(tool.inputSchema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch (e) {
    throw new Error(`${where}: inputSchema is not a usable JSON Schema (${(e as Error).message})`);
  }
  if (!(schema instanceof z.ZodObject)) throw new Error(`${where}: inputSchema must describe an object`);
  return { config: tool, schema, placeholders: [...tool.path.matchAll(PLACEHOLDER)].map((m) => m[1]!) };
}

function queryString(input: ToolInput): string {
  const q = new URLSearchParams();
  for (const [name, value] of Object.entries(input)) {
    if (value === undefined || value === null) continue;
    for (const v of Array.isArray(value) ? value : [value]) q.append(name, typeof v === 'object' ? JSON.stringify(v) : String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

type Target = { ok: true; path: string; rest: ToolInput } | { ok: false; result: CallToolResult };

/** Fills `{name}` from the input; the path is then made canonical so the policy decides what the upstream will see. */
function target(tool: ForwardedTool, input: ToolInput): Target {
  const rest: ToolInput = { ...input };
  let path = tool.config.path;
  for (const name of tool.placeholders) {
    const value = rest[name];
    delete rest[name];
    if (value === undefined || value === null || value === '') {
      return { ok: false, result: toolError(`Invalid input: "${name}" is required.`) };
    }
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      return { ok: false, result: toolError(`Invalid input: "${name}" must be a string or a number.`) };
    }
    // encodeURIComponent leaves "." and ".." as they are; as a whole segment they would climb the path.
    if (value === '.' || value === '..') return { ok: false, result: toolError(`Invalid input: "${name}" cannot be "${value}".`) };
    path = path.split(`{${name}}`).join(encodeURIComponent(String(value)));
  }
  try {
    return { ok: true, path: canonicalizePath(path), rest };
  } catch (e) {
    if (e instanceof AppError) return { ok: false, result: refusedResult(e) };
    throw e;
  }
}

export async function forwardTool(tool: ForwardedTool, input: ToolInput, fx: ForwardContext): Promise<CallToolResult> {
  const found = target(tool, input);
  if (!found.ok) return found.result;
  const method = tool.config.method;
  // Read per call: a policy reload swaps the engine in the holder.
  const refused = mcpToolRefusal(fx.policy.current, fx.caller, method, found.path, fx.apiPrefix);
  if (refused) return refusedResult(refusalError(refused));
  if (!fx.upstream) return toolError(`404 NOT_FOUND: no upstream service is configured, so nothing answers ${method} ${found.path}.`);
  // A tool call is a forward like any other: without a slot, one key's agent could hold every
  // upstream connection. Refused as the REST 429 TOO_MANY_CONCURRENT, in a tool result.
  let release: Release;
  try {
    release = fx.slots.take(fx.caller);
  } catch (e) {
    if (e instanceof AppError) return refusedResult(e);
    throw e;
  }
  try {
    return await sendTool(fx.upstream, method, found, headersFor(fx, method), inQueryOf(method));
  } finally {
    release();
  }
}

const inQueryOf = (method: string) => method === 'GET' || method === 'DELETE';

function headersFor(fx: ForwardContext, method: string): Record<string, string> {
  const identity = identityHeaders(fx.caller, (p) => permissionNames(fx.policy.current.scopes, p));
  const headers: Record<string, string> = { accept: 'application/json', ...fx.forwarded, ...identity };
  if (!inQueryOf(method)) headers['content-type'] = 'application/json';
  return headers;
}

/** The upstream exchange of one tool call, its answer read whole: the slot is held until then. */
async function sendTool(
  upstream: Upstream, method: string, found: { path: string; rest: ToolInput }, headers: Record<string, string>, inQuery: boolean,
): Promise<CallToolResult> {
  let res: Awaited<ReturnType<Upstream['send']>>;
  let text: string;
  try {
    res = await upstream.send({
      method,
      path: found.path + (inQuery ? queryString(found.rest) : ''),
      headers,
      ...(inQuery ? {} : { body: JSON.stringify(found.rest) }),
    });
    // A streamed answer (no length, or past 64 KiB) that breaks off is the same 502 as a small one.
    text = await textOf(res.body);
  } catch (e) {
    if (e instanceof AppError) return refusedResult(e);
    throw e;
  }
  const status = `${res.status} ${STATUS_CODES[res.status] ?? ''}`.trim();
  if (res.status < 200 || res.status >= 300) return toolError(`The upstream answered ${status}${text ? `: ${text}` : '.'}`);
  if (!text) return textResult(status);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return textResult(text);
  }
  return textResult(text, parsed);
}
