import { z } from 'zod';
import type { Config } from '../config.ts';
import type { ErrorCode } from '../errors.ts';
import type { Operation } from './operation.ts';
import { apiKeyOperations } from './routes/api-keys.ts';
import { authOperations } from './routes/auth.ts';
import { adminOperations } from './routes/admin.ts';
import { consoleOperations } from './routes/console.ts';
import { keyLifeOperations } from './routes/key-life.ts';
import { scopeOperations } from './routes/scopes.ts';
import { oauthGrantOperations } from './routes/oauth-grants.ts';
import { openApiOperations } from './routes/openapi.ts';
import { webhookOperations } from './routes/webhooks.ts';
import { secretScanningOperations } from './routes/secret-scanning.ts';
import { leakedKeyOperations } from './routes/leaked-keys.ts';
import { healthOperations } from './routes/health.ts';
import { mcpOperations } from './mcp-operations.ts';
import { oauthOperations } from './oauth-operations.ts';
import * as s from './openapi-schemas.ts';
import { statusOfCode } from './problem.ts';

// GET /api/openapi.json: every route the gateway serves itself, generated from the
// zod schemas that validate the requests (zod 4's z.toJSONSchema) and the ones in
// openapi-schemas.ts that describe the answers, with the problem codes each route can answer.

type Json = Record<string, unknown>;

// Any route can answer these: a path that cannot be made canonical (400), a key that does not
// authenticate or is over its quota (401, 429), a refusal by the policy or a cross-origin cookie
// write (403), a store that does not answer (503).
const EVERY_ROUTE: ErrorCode[] = [
  'VALIDATION_FAILED', 'UNAUTHENTICATED', 'INVALID_API_KEY', 'FORBIDDEN', 'QUOTA_EXCEEDED', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE',
];

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Json {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Json;
  return rest;
}

/** A path as an operation id's tail: `/admin/api-keys/{id}` reads `AdminApiKeysId`. */
const camelPath = (path: string) => path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''));

function parameters(op: Operation, path: string): Json[] {
  const params: Json[] = [...path.matchAll(/\{(\w+)\}/g)]
    .map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }));
  if (op.query) {
    const q = jsonSchema(op.query, 'input') as { properties?: Record<string, Json>; required?: string[] };
    for (const [name, schema] of Object.entries(q.properties ?? {})) {
      params.push({ name, in: 'query', required: q.required?.includes(name) ?? false, schema });
    }
  }
  return params;
}

function responses(op: Operation): Json {
  const out: Json = {};
  out[String(op.ok.status)] = op.ok.schema
    ? { description: 'Success', content: { [op.ok.contentType ?? 'application/json']: { schema: jsonSchema(op.ok.schema, 'output') } } }
    : op.ok.contentType
      ? { description: 'Success', content: { [op.ok.contentType]: { schema: { type: 'string' } } } }
      : { description: 'Success, no body' };
  const alsoContent = op.also ? { 'application/json': { schema: jsonSchema(op.also.schema, 'output') } } : {};
  if (op.also) out[String(op.also.status)] = { description: op.also.description, content: alsoContent };
  const bodyCodes: ErrorCode[] = op.body ? ['PAYLOAD_TOO_LARGE', 'REQUEST_TIMEOUT'] : [];
  const codes = [...new Set([...EVERY_ROUTE, ...bodyCodes, ...(op.problems ?? [])])];
  const byStatus = new Map<number, ErrorCode[]>();
  for (const c of codes) byStatus.set(statusOfCode(c), [...(byStatus.get(statusOfCode(c)) ?? []), c]);
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    const schema = jsonSchema(s.problem, 'output') as { properties: Json };
    schema.properties = { ...schema.properties, code: { type: 'string', enum: list }, status: { type: 'integer', const: status } };
    // A status that is both a plain answer and a problem (readiness while the process shuts down) lists both.
    const plain = op.also?.status === status
      ? { description: `${op.also.description}; or ${list.join(', ')}`, content: alsoContent }
      : { description: list.join(', '), content: {} };
    out[String(status)] = { description: plain.description, content: { ...plain.content, 'application/problem+json': { schema } } };
  }
  for (const [status, answer] of Object.entries(op.answers ?? {})) {
    // `withProblems`: the status is answered either way (a JSON-RPC error, or a problem of the gateway's own).
    const kept = answer.withProblems ? (out[status] as { content?: Json } | undefined)?.content ?? {} : {};
    const own = answer.schema ? { [answer.contentType ?? 'application/json']: { schema: jsonSchema(answer.schema, 'output') } }
      : answer.contentType ? { [answer.contentType]: { schema: { type: 'string' } } } : {};
    const content = { ...kept, ...own };
    out[status] = { description: answer.description, ...(Object.keys(content).length ? { content } : {}) };
  }
  return out;
}

const security: Record<NonNullable<Operation['security']>, Json[]> = {
  public: [],
  caller: [{ session: [] }, { apiKey: [] }],
  session: [{ session: [] }],
  admin: [{ session: [] }],
  mcp: [{ apiKey: [] }, { bearer: [] }],
};

/** Every operation the gateway serves itself, from the files that serve them, at its full path. */
function operations(config: Pick<Config, 'surface'>): Operation[] {
  const { paths, variant } = config.surface;
  const underPrefix: Operation[] = [
    ...Object.values(authOperations), ...Object.values(apiKeyOperations(variant)), ...Object.values(keyLifeOperations(variant)),
    ...Object.values(scopeOperations), ...Object.values(adminOperations), ...Object.values(consoleOperations),
    ...Object.values(oauthGrantOperations), ...Object.values(openApiOperations),
    ...Object.values(webhookOperations), ...Object.values(secretScanningOperations), ...Object.values(leakedKeyOperations),
  ];
  return [
    ...underPrefix.map((op) => ({ ...op, path: `${paths.api}${op.path}` })),
    ...Object.values(healthOperations),
    ...Object.values(mcpOperations(config.surface)),
    ...Object.values(oauthOperations),
  ];
}

// Every tag an operation may carry, described; the document declares the ones its operations use.
const TAGS: Record<Operation['tag'], string> = {
  auth: 'Accounts, sessions and organizations',
  keys: 'API keys: create, list, rotate, revoke, usage',
  admin: 'The operator\'s routes: users, every key, the audit log, the policy, the fleet',
  oauth: 'The OAuth 2.1 authorization server for MCP clients: metadata, registration, authorization with consent, tokens, connected apps',
  mcp: 'The MCP server (Streamable HTTP) and its protected-resource metadata',
  meta: 'This document, liveness, readiness and metrics',
};
const PAGES_TAG = 'The pages for people: sign-in, settings, the operator console, and the assets they load';

/** A route as the routers list it (app.ts): the pages and the catch-alls have no operation. */
export interface ServedPath { methods: string[]; path: string }

/**
 * The pages for people (web/), described from the routes served rather than declared: the
 * document sits below them. HTML, a redirect (to sign in, or on after a form) or a problem.
 */
function pageOperation(method: string, path: string): Json {
  const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
  const html = { 'text/html': { schema: { type: 'string' } } };
  return {
    summary: method === 'get'
      ? 'A page for people (HTML), or one of its assets'
      : 'A form of a page: answered by a redirect, or the page again with what was wrong',
    tags: ['pages'],
    operationId: `${method}Page${camelPath(path)}`,
    security: [{ session: [] }, {}],
    ...(params.length ? { parameters: params } : {}),
    responses: {
      ...(method === 'get' ? { 200: { description: 'The page', content: html } } : {}),
      303: { description: 'On to the next page' },
      default: {
        description: 'A redirect to sign in, a page saying what went wrong, or a problem',
        content: { ...html, 'application/problem+json': { schema: jsonSchema(s.problem, 'output') } },
      },
    },
  };
}

/**
 * The document. `servers` names publicUrl; without one the route names the origin asked
 * (routes/openapi.ts). `served` adds the routes no operation describes: the pages.
 */
export function buildOpenApi(config: Pick<Config, 'surface' | 'publicUrl'>, served: ServedPath[] = []): Json {
  const paths: Record<string, Record<string, Json>> = {};
  const used = new Set<Operation['tag'] | 'pages'>();
  for (const op of operations(config)) {
    used.add(op.tag);
    // The router's `:id` is OpenAPI's `{id}`.
    const path = op.path.replace(/:(\w+)/g, '{$1}');
    paths[path] ??= {};
    const bodyType = op.bodyContentType ?? 'application/json';
    paths[path][op.method] = {
      summary: op.summary,
      tags: [op.tag],
      operationId: op.operationId ?? `${op.method}${camelPath(path)}`,
      security: security[op.security ?? 'caller'],
      ...(op.query || /\{/.test(path) ? { parameters: parameters(op, path) } : {}),
      ...(op.body
        ? { requestBody: { required: op.bodyRequired ?? false, content: { [bodyType]: { schema: jsonSchema(op.body, 'input') } } } }
        : {}),
      responses: responses(op),
      // A status answered otherwise (the MCP endpoint's OAuth-form 401) carries no problem code.
      'x-problem-codes': [...new Set([...EVERY_ROUTE, ...(op.problems ?? [])])].filter((c) => !op.answers?.[statusOfCode(c)]),
    };
  }
  for (const route of served) {
    // A catch-all answers 404 or hands the request to the OAuth library, whose routes are operations.
    if (route.path.includes('{*')) continue;
    const path = route.path.replace(/:(\w+)/g, '{$1}');
    for (const method of route.methods.map((m) => m.toLowerCase()).filter((m) => m === 'get' || m === 'post')) {
      if (paths[path]?.[method]) continue;
      paths[path] ??= {};
      paths[path][method] = pageOperation(method, path);
      used.add('pages');
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'keygate',
      version: '0.1.0',
      description: 'The routes the gateway serves itself. Every other path under the prefix is decided by the access policy '
        + 'and forwarded upstream. Errors are RFC 9457 problems; `code` is stable.',
    },
    ...(config.publicUrl ? { servers: [{ url: config.publicUrl.replace(/\/$/, '') }] } : {}),
    tags: [
      ...(Object.keys(TAGS) as Operation['tag'][]).filter((t) => used.has(t)).map((name) => ({ name, description: TAGS[name] })),
      ...(used.has('pages') ? [{ name: 'pages', description: PAGES_TAG }] : []),
    ],
    components: {
      securitySchemes: {
        session: { type: 'apiKey', in: 'cookie', name: 'keygate_session' },
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'An API key, or an access token this gateway issued by OAuth; on the MCP endpoint only',
        },
      },
    },
    paths,
  };
}
