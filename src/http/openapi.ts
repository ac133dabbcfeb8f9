import { z } from 'zod';
import type { Config } from '../config.ts';
import type { ErrorCode } from '../errors.ts';
import { createBodyA, createBodyB, deleteBody, getQuery, updateBody } from './routes/api-keys.ts';
import { changePasswordBody, createOrgBody, deleteUserBody, revokeSessionBody, setActiveBody, signInBody, signUpBody } from './routes/auth.ts';
import { pageQuery } from './routes/admin.ts';
import { rotateBody, usageQuery } from './routes/key-life.ts';
import * as s from './openapi-schemas.ts';
import { statusOfCode } from './problem.ts';

// GET /api/openapi.json (CONTRACT 14): every route the gateway serves itself, generated from the
// zod schemas that validate the requests (zod 4's z.toJSONSchema) and the ones in
// openapi-schemas.ts that describe the answers, with the problem codes each route can answer.

type Json = Record<string, unknown>;

// Any route can answer these: a path that cannot be made canonical (400), a key that does not
// authenticate or is over its quota (401, 429), a refusal by the policy or a cross-origin cookie
// write (403), a store that does not answer (503).
const EVERY_ROUTE: ErrorCode[] = ['VALIDATION_FAILED', 'UNAUTHENTICATED', 'INVALID_API_KEY', 'FORBIDDEN', 'QUOTA_EXCEEDED', 'SERVICE_UNAVAILABLE'];
const KEY_ROUTE: ErrorCode[] = ['API_KEYS_DISABLED', 'NOT_FOUND'];

interface Operation {
  method: 'get' | 'post' | 'delete';
  path: string;
  summary: string;
  tag: string;
  body?: z.ZodType;
  query?: z.ZodType;
  ok: { status: number; schema: z.ZodType | null; contentType?: string };
  /** Other answers that are not problems, e.g. readiness's 503 with its checks. */
  also?: { status: number; schema: z.ZodType; description: string };
  problems?: ErrorCode[];
  security?: 'public' | 'caller' | 'session' | 'admin';
}

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Json {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Json;
  return rest;
}

function parameters(op: Operation): Json[] {
  const params: Json[] = [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }));
  if (op.query) {
    const q = jsonSchema(op.query, 'input') as { properties?: Record<string, Json>; required?: string[] };
    for (const [name, schema] of Object.entries(q.properties ?? {})) params.push({ name, in: 'query', required: q.required?.includes(name) ?? false, schema });
  }
  return params;
}

function responses(op: Operation): Json {
  const out: Json = {};
  out[String(op.ok.status)] = op.ok.schema
    ? { description: 'Success', content: { [op.ok.contentType ?? 'application/json']: { schema: jsonSchema(op.ok.schema, 'output') } } }
    : { description: 'Success, no body' };
  const alsoContent = op.also ? { 'application/json': { schema: jsonSchema(op.also.schema, 'output') } } : {};
  if (op.also) out[String(op.also.status)] = { description: op.also.description, content: alsoContent };
  const codes = [...new Set([...EVERY_ROUTE, ...(op.body ? ['PAYLOAD_TOO_LARGE' as const, 'REQUEST_TIMEOUT' as const] : []), ...(op.problems ?? [])])];
  const byStatus = new Map<number, ErrorCode[]>();
  for (const c of codes) byStatus.set(statusOfCode(c), [...(byStatus.get(statusOfCode(c)) ?? []), c]);
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    const schema = jsonSchema(s.problem, 'output') as { properties: Json };
    schema.properties = { ...schema.properties, code: { type: 'string', enum: list }, status: { type: 'integer', const: status } };
    // A status that is both a plain answer and a problem (readiness while the process shuts down) lists both.
    const plain = op.also?.status === status ? { description: `${op.also.description}; or ${list.join(', ')}`, content: alsoContent } : { description: list.join(', '), content: {} };
    out[String(status)] = { description: plain.description, content: { ...plain.content, 'application/problem+json': { schema } } };
  }
  return out;
}

const security: Record<NonNullable<Operation['security']>, Json[]> = {
  public: [],
  caller: [{ session: [] }, { apiKey: [] }],
  session: [{ session: [] }],
  admin: [{ session: [] }],
};

function operations(config: Config): Operation[] {
  const variant = config.apiKeys.enabled ? config.apiKeys.variant : 'A';
  const createBody = variant === 'A' ? createBodyA : createBodyB;
  const sessionOnlyA = variant === 'A' ? 'session' : 'caller';
  return [
    { method: 'post', path: '/auth/sign-up/email', tag: 'auth', summary: 'Create an account and sign in', body: signUpBody, ok: { status: 201, schema: s.userBody }, problems: ['EMAIL_TAKEN'], security: 'public' },
    { method: 'post', path: '/auth/sign-in/email', tag: 'auth', summary: 'Sign in', body: signInBody, ok: { status: 200, schema: s.userBody }, problems: ['INVALID_CREDENTIALS', 'USER_BANNED', 'TOO_MANY_ATTEMPTS'], security: 'public' },
    { method: 'post', path: '/auth/sign-out', tag: 'auth', summary: 'Sign out', ok: { status: 204, schema: null }, security: 'session' },
    { method: 'get', path: '/auth/get-session', tag: 'auth', summary: 'The caller and their session or key', ok: { status: 200, schema: s.session } },
    { method: 'get', path: '/auth/list-sessions', tag: 'auth', summary: "The caller's sessions", ok: { status: 200, schema: s.sessions }, security: 'session' },
    { method: 'post', path: '/auth/revoke-session', tag: 'auth', summary: 'End one of the sessions', body: revokeSessionBody, ok: { status: 204, schema: null }, problems: ['NOT_FOUND'], security: 'session' },
    { method: 'post', path: '/auth/change-password', tag: 'auth', summary: 'Change the password', body: changePasswordBody, ok: { status: 204, schema: null }, problems: ['INVALID_CREDENTIALS'], security: 'session' },
    { method: 'post', path: '/auth/delete-user', tag: 'auth', summary: 'Delete the account and every key', body: deleteUserBody, ok: { status: 204, schema: null }, problems: ['INVALID_CREDENTIALS'], security: 'session' },
    { method: 'post', path: '/auth/api-key/create', tag: 'auth', summary: 'Create a key (Variant B only; Variant A answers 403)', body: createBody, ok: { status: 201, schema: s.createdApiKey }, problems: [...KEY_ROUTE, 'FEATURE_DISABLED'] },
    { method: 'post', path: '/auth/api-key/update', tag: 'auth', summary: 'Rename, disable or set the expiry of an own key', body: updateBody, ok: { status: 200, schema: s.apiKey }, problems: KEY_ROUTE, security: 'session' },
    { method: 'post', path: '/auth/api-key/delete', tag: 'auth', summary: 'Revoke an own key (Variant B only)', body: deleteBody, ok: { status: 204, schema: null }, problems: KEY_ROUTE },
    { method: 'get', path: '/auth/api-key/get', tag: 'auth', summary: 'One own key', query: getQuery, ok: { status: 200, schema: s.apiKey }, problems: KEY_ROUTE },
    { method: 'get', path: '/auth/api-key/list', tag: 'auth', summary: 'Own keys', ok: { status: 200, schema: s.keyList }, problems: KEY_ROUTE },
    { method: 'post', path: '/auth/organization/create', tag: 'auth', summary: 'Create an organization', body: createOrgBody, ok: { status: 201, schema: s.organizationBody }, problems: ['NOT_FOUND'], security: 'session' },
    { method: 'post', path: '/auth/organization/set-active', tag: 'auth', summary: 'Choose the active organization', body: setActiveBody, ok: { status: 200, schema: s.activeOrganization }, security: 'session' },
    { method: 'get', path: '/auth/organization/list', tag: 'auth', summary: "The caller's organizations", ok: { status: 200, schema: s.organizations } },
    { method: 'get', path: '/auth/organization/get-active-member', tag: 'auth', summary: 'Membership in the active organization', ok: { status: 200, schema: s.member }, problems: ['NOT_FOUND'] },
    { method: 'get', path: '/api-keys', tag: 'keys', summary: 'Own keys, newest first; revoked and retired keys left out', ok: { status: 200, schema: s.keyList }, problems: KEY_ROUTE },
    { method: 'post', path: '/api-keys', tag: 'keys', summary: 'Create a key; the plaintext is in the answer once', body: createBody, ok: { status: 201, schema: s.createdApiKey }, problems: [...KEY_ROUTE, 'FEATURE_DISABLED', 'API_KEY_LIMIT', 'API_KEY_DAILY_LIMIT'], security: sessionOnlyA },
    { method: 'delete', path: '/api-keys/{id}', tag: 'keys', summary: 'Revoke an own key', ok: { status: 204, schema: null }, problems: KEY_ROUTE, security: sessionOnlyA },
    { method: 'post', path: '/api-keys/{id}/rotate', tag: 'keys', summary: 'Issue a successor; the old key works until the grace period ends', body: rotateBody, ok: { status: 201, schema: s.createdApiKey }, problems: [...KEY_ROUTE, 'API_KEY_DAILY_LIMIT'], security: sessionOnlyA },
    { method: 'get', path: '/api-keys/{id}/usage', tag: 'keys', summary: 'Daily requests and refusals of an own key, oldest first', query: usageQuery, ok: { status: 200, schema: s.usage }, problems: KEY_ROUTE },
    { method: 'get', path: '/scopes', tag: 'keys', summary: 'The scopes a key may be given, in file order (empty under Variant B)', ok: { status: 200, schema: s.scopeList } },
    { method: 'get', path: '/admin/api-keys', tag: 'admin', summary: "Every user's keys, paginated", query: pageQuery, ok: { status: 200, schema: s.adminKeyList }, problems: KEY_ROUTE, security: 'admin' },
    { method: 'delete', path: '/admin/api-keys/{id}', tag: 'admin', summary: 'Revoke any key', ok: { status: 204, schema: null }, problems: KEY_ROUTE, security: 'admin' },
    { method: 'get', path: '/admin/api-keys/{id}/usage', tag: 'admin', summary: "Daily requests and refusals of any user's key", query: usageQuery, ok: { status: 200, schema: s.usage }, problems: KEY_ROUTE, security: 'admin' },
    { method: 'get', path: '/oauth/grants', tag: 'oauth', summary: 'Connected apps: the MCP clients allowed to act as the caller', ok: { status: 200, schema: s.grantList }, security: 'session' },
    { method: 'delete', path: '/oauth/grants/{id}', tag: 'oauth', summary: 'Revoke a connected app and every token of its grant', ok: { status: 204, schema: null }, problems: ['NOT_FOUND'], security: 'session' },
    { method: 'get', path: '/admin/audit-log', tag: 'admin', summary: 'The audit trail, newest first', query: pageQuery, ok: { status: 200, schema: s.auditLog }, security: 'admin' },
    { method: 'post', path: '/admin/users/{id}/ban', tag: 'admin', summary: "Ban a user: their sessions and keys stop at once", ok: { status: 204, schema: null }, problems: ['NOT_FOUND'], security: 'admin' },
    { method: 'post', path: '/admin/users/{id}/unban', tag: 'admin', summary: 'Lift a ban', ok: { status: 204, schema: null }, problems: ['NOT_FOUND'], security: 'admin' },
    { method: 'get', path: '/openapi.json', tag: 'meta', summary: 'This document', ok: { status: 200, schema: s.openApiDocument }, security: 'public' },
  ];
}

/** Served outside the prefix; the same document describes them. */
function rootOperations(): Operation[] {
  return [
    { method: 'get', path: '/healthz', tag: 'meta', summary: 'Liveness', ok: { status: 200, schema: s.health }, security: 'public' },
    { method: 'get', path: '/readyz', tag: 'meta', summary: 'Readiness of PostgreSQL and, when configured, Redis (503 when not ready)', ok: { status: 200, schema: s.readiness }, also: { status: 503, schema: s.readiness, description: 'Not ready: the checks say which store does not answer' }, security: 'public' },
    { method: 'get', path: '/metrics', tag: 'meta', summary: 'Prometheus metrics', ok: { status: 200, schema: z.string(), contentType: 'text/plain' }, security: 'public' },
    { method: 'get', path: '/.well-known/oauth-protected-resource', tag: 'mcp', summary: 'RFC 9728 metadata of the MCP endpoint', ok: { status: 200, schema: s.resourceMetadata }, problems: ['NOT_FOUND'], security: 'public' },
  ];
}

export function buildOpenApi(config: Pick<Config, 'apiPrefix' | 'apiKeys' | 'mcpServer' | 'publicUrl'>): Json {
  const paths: Record<string, Record<string, Json>> = {};
  const add = (op: Operation, path: string) => {
    paths[path] ??= {};
    paths[path][op.method] = {
      summary: op.summary,
      tags: [op.tag],
      operationId: `${op.method}${path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
      security: security[op.security ?? 'caller'],
      ...(op.query || /\{/.test(op.path) ? { parameters: parameters(op) } : {}),
      ...(op.body ? { requestBody: { required: false, content: { 'application/json': { schema: jsonSchema(op.body, 'input') } } } } : {}),
      responses: responses(op),
      'x-problem-codes': [...new Set([...EVERY_ROUTE, ...(op.problems ?? [])])],
    };
  };
  for (const op of operations(config as Config)) add(op, `${config.apiPrefix}${op.path}`);
  for (const op of rootOperations()) add(op, op.path);
  // The MCP endpoint: refusals take the OAuth form (401), other failures are problems; 404 while
  // the MCP server is off.
  const mcpOp: Operation = { method: 'post', path: '/mcp', tag: 'mcp', summary: '', ok: { status: 200, schema: null }, problems: ['NOT_FOUND', 'PAYLOAD_TOO_LARGE'] };
  paths[`${config.apiPrefix}/mcp`] = {
    post: {
      summary: 'MCP Streamable HTTP (JSON-RPC); a key with the mcp permission in x-api-key or Authorization: Bearer',
      tags: ['mcp'], operationId: 'postMcp', security: [{ apiKey: [] }, { bearer: [] }],
      responses: {
        ...responses(mcpOp),
        '200': { description: 'A JSON-RPC answer (JSON or an event stream)' },
        '401': { description: 'Every refusal, in the OAuth form (WWW-Authenticate: Bearer error="invalid_token")', content: { 'application/json': { schema: jsonSchema(s.mcpRefusal, 'output') } } },
      },
    },
  };
  return {
    openapi: '3.1.0',
    info: { title: 'keygate', version: '0.1.0', description: 'The routes the gateway serves itself. Every other path under the prefix is decided by the access policy and forwarded upstream. Errors are RFC 9457 problems; `code` is stable.' },
    ...(config.publicUrl ? { servers: [{ url: config.publicUrl }] } : {}),
    tags: [{ name: 'auth' }, { name: 'keys' }, { name: 'admin' }, { name: 'mcp' }, { name: 'meta' }],
    components: {
      securitySchemes: {
        session: { type: 'apiKey', in: 'cookie', name: 'keygate_session' },
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
        bearer: { type: 'http', scheme: 'bearer', description: 'An API key, on the MCP endpoint only' },
      },
    },
    paths,
  };
}
