import { z } from 'zod';

// The shapes of the gateway's answers, as zod schemas, for the OpenAPI document served at /api/openapi.json. The
// integration tests check every answer they receive against the document, so these cannot drift
// from what the handlers send.

const instant = z.iso.datetime();
const id = z.uuid();

export const apiKey = z.object({
  id, name: z.string(), start: z.string().length(12), prefix: z.string(),
  permissions: z.record(z.string(), z.array(z.string())),
  ai: z.boolean(), mcp: z.boolean(),
  requestQuota: z.object({ limit: z.int().positive(), window: z.literal('day') }),
  rateLimits: z.array(z.object({ window: z.enum(['1s', '10s', '1m', '10m', '1h']), limit: z.int().positive() }))
    .describe('Short windows beside the day, shortest first; empty when none.'),
  state: z.enum(['active', 'disabled', 'expired', 'rate-limited']),
  enabled: z.boolean(),
  expiresAt: instant.nullable(), createdAt: instant, lastUsedAt: instant.nullable(),
  rotatedFrom: id.nullable(), rotatedTo: id.nullable(),
  expiresSoon: z.boolean().describe('Stops working within 7 days.'),
});

export const createdApiKey = apiKey.extend({ key: z.string().describe('The plaintext key. Sent once, never again.') });
export const keyList = z.object({ keys: z.array(apiKey) });
export const adminKeyList = z.object({
  keys: z.array(apiKey.extend({
    state: z.enum(['active', 'disabled', 'expired', 'rate-limited', 'revoked']),
    revokedAt: instant.nullable(),
    owner: z.object({ id, name: z.string(), email: z.string() }),
  })),
  nextCursor: z.string().nullable(),
});

export const scopeList = z.object({
  scopes: z.array(z.object({
    name: z.string(), label: z.string(), description: z.string(), actions: z.array(z.string()), available: z.boolean(),
  })),
});
export const usage = z.object({
  keyId: id,
  limit: z.int().positive(),
  days: z.array(z.object({ date: z.iso.date(), requests: z.int().min(0), refused: z.int().min(0) })),
});

export const grantList = z.object({
  grants: z.array(z.object({
    id: z.string(), clientId: z.string(), clientName: z.string(), createdAt: instant, lastUsedAt: instant.nullable(),
  })),
});

// The audit log's entries are the console's (every kind, with actor and changes).
export { auditLog } from './console-schemas.ts';

const user = z.object({ id, email: z.string(), name: z.string(), role: z.enum(['user', 'admin']) });
export const userBody = z.object({ user });
export const session = z.object({
  session: z.object({
    id, kind: z.enum(['session', 'key']), userId: id, activeOrganizationId: id.nullable(), expiresAt: instant.nullable(),
  }),
  user,
});
export const sessions = z.object({ sessions: z.array(z.looseObject({ id, userId: id, expiresAt: instant, current: z.boolean() })) });
const organization = z.looseObject({ id, name: z.string(), slug: z.string() });
export const organizationBody = z.object({ organization });
export const organizations = z.object({ organizations: z.array(organization.extend({ role: z.enum(['owner', 'admin', 'member']) })) });
export const activeOrganization = z.object({ activeOrganizationId: id.nullable() });
export const member = z.object({ member: z.looseObject({ role: z.enum(['owner', 'admin', 'member']) }) });

export const health = z.object({ status: z.literal('ok') });
export const readiness = z.looseObject({
  status: z.enum(['ready', 'unavailable']),
  checks: z.record(z.string(), z.enum(['ok', 'unavailable'])),
});
export const resourceMetadata = z.looseObject({ resource: z.string(), bearer_methods_supported: z.array(z.string()).optional() });
export const openApiDocument = z.looseObject({ openapi: z.string(), info: z.looseObject({}), paths: z.record(z.string(), z.unknown()) });
export const jsonRpcError = z.looseObject({
  jsonrpc: z.literal('2.0'), id: z.union([z.string(), z.number(), z.null()]), error: z.looseObject({ code: z.int(), message: z.string() }),
});
export const jsonRpcMessage = z.looseObject({
  jsonrpc: z.literal('2.0'),
  id: z.union([z.string(), z.number(), z.null()]).optional().describe('Absent on a notification'),
  method: z.string().optional().describe('A request or notification; a response carries result or error instead'),
  params: z.record(z.string(), z.unknown()).optional(),
  result: z.unknown().optional(),
  error: z.looseObject({ code: z.int(), message: z.string() }).optional(),
}).describe('One JSON-RPC 2.0 message of the Model Context Protocol (no batches)');

// OAuth answers keep the shapes of their RFCs: the fields below are the ones keygate relies on.
export const authorizationServerMetadata = z.looseObject({
  issuer: z.string(), authorization_endpoint: z.string(), token_endpoint: z.string(),
  registration_endpoint: z.string(), revocation_endpoint: z.string(),
  response_types_supported: z.array(z.string()), grant_types_supported: z.array(z.string()),
  code_challenge_methods_supported: z.array(z.string()),
  scopes_supported: z.array(z.string()), token_endpoint_auth_methods_supported: z.array(z.string()),
});
export const oauthError = z.looseObject({ error: z.string(), error_description: z.string().optional() });
export const clientMetadata = z.looseObject({
  redirect_uris: z.array(z.string()), client_name: z.string().optional(), application_type: z.enum(['native', 'web']).optional(),
  token_endpoint_auth_method: z.literal('none').optional(),
  grant_types: z.array(z.string()).optional(), response_types: z.array(z.string()).optional(),
});
export const clientInformation = clientMetadata.extend({ client_id: z.string(), registration_access_token: z.string().optional() });
export const tokenRequest = z.looseObject({
  grant_type: z.enum(['authorization_code', 'refresh_token']), client_id: z.string(),
  code: z.string().optional(), code_verifier: z.string().optional(),
  redirect_uri: z.string().optional(), refresh_token: z.string().optional(), resource: z.string().optional(),
});
export const revocationRequest = z.looseObject({ token: z.string(), client_id: z.string(), token_type_hint: z.string().optional() });
export const tokenResponse = z.looseObject({
  access_token: z.string(), token_type: z.string(), expires_in: z.int().optional(),
  refresh_token: z.string().optional(), scope: z.string().optional(),
});
export const jwks = z.looseObject({ keys: z.array(z.looseObject({})) });
export const authorizationQuery = z.object({
  response_type: z.literal('code'),
  client_id: z.string().describe('A registered client id, or the https URL of the client\'s metadata document'),
  redirect_uri: z.string(), code_challenge: z.string(), code_challenge_method: z.literal('S256'),
  scope: z.string().optional().describe('Always taken as mcp, the one scope there is'),
  state: z.string().optional(), resource: z.string().optional(),
});

export const mcpRefusal = z.object({ error: z.literal('invalid_token'), error_description: z.string() });

export const problem = z.looseObject({
  type: z.string(), title: z.string(), status: z.int(), detail: z.string(), code: z.string(), instance: z.string().optional(),
  errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  requiredPermission: z.string().optional(),
});

export const webhook = z.object({
  id, url: z.string(),
  events: z.array(z.string()).nullable().describe('null: every type'),
  description: z.string(), enabled: z.boolean(),
  disabledReason: z.string().nullable().describe('`failing` when keygate disabled it after days of failed deliveries'),
  createdAt: instant,
});
export const createdWebhook = webhook.extend({ secret: z.string().describe('whsec_ and base64 of 32 bytes. Sent once, never again.') });
export const webhookList = z.object({ webhooks: z.array(webhook) });
export const rotatedWebhookSecret = z.object({ secret: z.string(), previousSecretExpiresAt: instant });
export const webhookTest = z.object({ eventId: z.string() });
export const webhookDeliveries = z.object({
  deliveries: z.array(z.object({
    eventId: z.string(), type: z.string(), state: z.enum(['pending', 'delivered', 'failed']), createdAt: instant,
    nextAttemptAt: instant.nullable(),
    attempts: z.array(z.object({
      at: instant, status: z.int().nullable(), durationMs: z.int(), error: z.string().nullable(),
      response: z.string().nullable().describe("The answer's first 1 KB"),
    })),
  })),
});
