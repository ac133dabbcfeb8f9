import { z } from 'zod';
import { durationMs } from './duration.ts';

// What keygate.yaml may say, as one zod schema; src/config.ts reads the file and the environment.

// One wording for every count in the file, whichever check failed (type, fraction or sign).
const POSITIVE_INT = { error: 'expected a positive integer' };
const positiveInt = z.number(POSITIVE_INT).int(POSITIVE_INT).positive(POSITIVE_INT);
/** A span written as a number and a unit: `500ms`, `1s`, `5m`, `2h`, `5d`. */
const duration = z.string().regex(/^[1-9][0-9]{0,8}(ms|s|m|h|d)$/, 'a duration such as 5s, 5m, 2h or 5d');
/**
 * A webhook span, added to and taken from now() in the database: ten years at most, well within
 * what PostgreSQL's interval holds (999999999d is not, and every failed attempt's write failed).
 */
const webhookSpan = duration.refine((text) => !/^\d+(ms|s|m|h|d)$/.test(text) || durationMs(text) <= durationMs('3650d'), 'at most 3650d');
// Where GitHub publishes the keys that sign its secret-scanning reports.
const GITHUB_SCANNING_KEYS_URL = 'https://api.github.com/meta/public_keys/secret_scanning';

/** The short windows a plan may bound beside its day, and their lengths in seconds. */
export const RATE_WINDOWS = { '1s': 1, '10s': 10, '1m': 60, '10m': 600, '1h': 3600 } as const;
export type RateWindow = keyof typeof RATE_WINDOWS;
export interface RateLimitRule { window: RateWindow; limit: number }
const rateLimitsSchema = z
  .array(z.object({ window: z.enum(Object.keys(RATE_WINDOWS) as [RateWindow, ...RateWindow[]]), limit: positiveInt }).strict())
  .max(4, 'at most 4 windows')
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((r, i) => {
      if (seen.has(r.window)) ctx.addIssue({ code: 'custom', path: [i, 'window'], message: `window ${r.window} is declared twice` });
      seen.add(r.window);
    });
  });

const apiKeysEnabledA = z
  .object({
    enabled: z.literal(true),
    variant: z.literal('A').default('A'),
    prefix: z.string().regex(/^[A-Za-z0-9_]{1,16}$/, 'letters, digits or "_", 1-16 characters').default('key_'),
    maxKeysPerUser: positiveInt.default(10),
    maxCreatesPerDay: positiveInt.default(20),
    maxLifetimeDays: positiveInt.optional(),
  })
  .strict();

const apiKeysEnabledB = z
  .object({
    enabled: z.literal(true),
    variant: z.literal('B'),
    prefix: z.string().regex(/^[A-Za-z0-9_]{1,16}$/, 'letters, digits or "_", 1-16 characters').default('key_'),
    // An operator's policy: every key expires within this many days.
    maxLifetimeDays: positiveInt.optional(),
  })
  .strict();

const apiKeysDisabled = z.object({ enabled: z.literal(false) }).strict();

// `enabled` picks the branch; `variant` then picks A or B. Variant B's object is strict, so
// maxKeysPerUser or maxCreatesPerDay under B are refused as unknown keys.
const apiKeysSchema = z
  .preprocess(
    (v) => (v && typeof v === 'object' && !('enabled' in v) ? { ...v, enabled: true } : v),
    z.union([apiKeysDisabled, z.discriminatedUnion('variant', [apiKeysEnabledA, apiKeysEnabledB])]),
  )
  .default({ enabled: true, variant: 'A', prefix: 'key_', maxKeysPerUser: 10, maxCreatesPerDay: 20 });

const toolSchema = z
  .object({
    name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
    description: z.string().default(''),
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']),
    path: z.string().startsWith('/'),
    inputSchema: z.record(z.string(), z.unknown()).default({ type: 'object', properties: {} }),
  })
  .strict();

export const configSchema = z
  .object({
    apiPrefix: z.string().regex(/^\/[A-Za-z0-9_-]+$/, 'a single path segment such as /api').default('/api'),
    publicUrl: z.url().nullable().default(null),
    apiKeys: apiKeysSchema,
    ai: z.object({ enabled: z.boolean().default(false) }).strict().default({ enabled: false }),
    mcpServer: z
      .object({
        enabled: z.boolean().default(true), tools: z.array(toolSchema).optional(),
        // Hosts (name or address, any port) and origins (scheme://host[:port]) /api/mcp accepts
        // beside its own, against DNS rebinding.
        allowedHosts: z.array(z.string().min(1)).default([]),
        allowedOrigins: z.array(z.string().min(1)).default([]),
      })
      .strict()
      .default({ enabled: true, allowedHosts: [], allowedOrigins: [] }),
    billingScope: z.enum(['user', 'organization']).default('user'),
    defaultApiRateLimit: positiveInt.default(100),
    defaultPlan: z.string().min(1).default('free'),
    // Windows for plans that declare none of their own.
    defaultRateLimits: rateLimitsSchema.default([]),
    plans: z
      .record(z.string(), z.object({ apiRateLimit: positiveInt.optional(), rateLimits: rateLimitsSchema.optional() }).strict())
      .default({ free: {} }),
    upstream: z
      .object({
        url: z.url().nullable().default(null),
        // How long the upstream has to start answering once the request is sent (504 after).
        timeoutMs: positiveInt.default(30_000),
        // Forwards one caller may hold open at once, so one key cannot take every upstream connection.
        maxConcurrentPerCaller: positiveInt.default(32),
      })
      .strict()
      .default({ url: null, timeoutMs: 30_000, maxConcurrentPerCaller: 32 }),
    policy: z
      .object({
        model: z.string().default('policies/model.conf'),
        file: z.string().nullable().default(null),
        scopes: z.string().default('policies/scopes.yaml'),
      })
      .strict()
      .default({ model: 'policies/model.conf', file: null, scopes: 'policies/scopes.yaml' }),
    keyCache: z
      .object({
        // Heap the verification cache of stored keys may take; past it the least recently used
        // records go, and their keys cost a database lookup again.
        maxBytes: positiveInt.min(1024 * 1024, 'at least 1048576 (1 MiB)').default(32 * 1024 * 1024),
        // Keys found not to exist, remembered apart from real ones.
        unknownMaxBytes: positiveInt.min(64 * 1024, 'at least 65536').default(2 * 1024 * 1024),
      })
      .strict()
      .default({ maxBytes: 32 * 1024 * 1024, unknownMaxBytes: 2 * 1024 * 1024 }),
    // OAuth grants one person may hold at once, under either key variant.
    oauth: z
      .object({
        maxGrantsPerUser: positiveInt.default(10),
        // Client ID Metadata Documents are fetched from public addresses only; tests turn this on
        // to serve documents from loopback.
        clientMetadata: z.object({ allowPrivateAddresses: z.boolean().default(false) }).strict().default({ allowPrivateAddresses: false }),
      })
      .strict()
      .default({ maxGrantsPerUser: 10, clientMetadata: { allowPrivateAddresses: false } }),
    auth: z
      .object({ signUp: z.boolean().default(true), sessionTtlDays: positiveInt.default(30) })
      .strict()
      .default({ signUp: true, sessionTtlDays: 30 }),
    database: z
      .object({
        // Each request-path query's deadline, and the longest wait for a pool connection: a
        // database that stops answering is an outage (503), not a hang.
        queryTimeoutMs: positiveInt.default(1_500),
        // Connections the request pool may open; the start log prints the instance's whole budget.
        poolSize: positiveInt.default(10),
      })
      .strict()
      .default({ queryTimeoutMs: 1_500, poolSize: 10 }),
    redis: z
      .object({
        // Replicas each counter write waits for (Redis WAIT), at most waitTimeoutMs: a failover
        // then loses no acknowledged count. 0: no wait.
        waitReplicas: z.number().int().min(0).default(0),
        waitTimeoutMs: positiveInt.default(50),
      })
      .strict()
      .default({ waitReplicas: 0, waitTimeoutMs: 50 }),
    server: z
      // Open connections one instance holds at most; past it a new one is closed at once.
      .object({ maxConnections: positiveInt.default(10_000) })
      .strict()
      .default({ maxConnections: 10_000 }),
    webhooks: z
      .object({
        // Waits between a failed delivery and its next attempt; past the last one it is failed.
        retrySchedule: z.array(webhookSpan).min(1).max(20).default(['5s', '5m', '30m', '2h', '5h', '10h', '10h']),
        // An endpoint whose deliveries have all failed this long is disabled.
        disableAfter: webhookSpan.default('5d'),
        // http and loopback or private addresses let through: for tests and local receivers only.
        allowPrivateAddresses: z.boolean().default(false),
      })
      .strict()
      .default({ retrySchedule: ['5s', '5m', '30m', '2h', '5h', '10h', '10h'], disableAfter: '5d', allowPrivateAddresses: false }),
    secretScanning: z
      .object({
        github: z
          .object({
            enabled: z.boolean().default(false),
            keysUrl: z.string().url().default(GITHUB_SCANNING_KEYS_URL),
          })
          .strict()
          .default({ enabled: false, keysUrl: GITHUB_SCANNING_KEYS_URL }),
      })
      .strict()
      .default({ github: { enabled: false, keysUrl: GITHUB_SCANNING_KEYS_URL } }),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (!(c.defaultPlan in c.plans)) {
      ctx.addIssue({ code: 'custom', path: ['defaultPlan'], message: `plan "${c.defaultPlan}" is not defined in plans` });
    }
    // A window may not allow more than the day it sits in: checked against the day of every plan
    // that will stamp it (the default windows against the plans without windows of their own).
    const overDay = (rules: RateLimitRule[], day: number, path: (string | number)[]) => rules.forEach((r, i) => {
      if (r.limit > day) ctx.addIssue({ code: 'custom', path: [...path, i, 'limit'], message: `at most the day's ${day}` });
    });
    for (const [name, plan] of Object.entries(c.plans)) {
      const day = plan.apiRateLimit ?? c.defaultApiRateLimit;
      if (plan.rateLimits) overDay(plan.rateLimits, day, ['plans', name, 'rateLimits']);
      else overDay(c.defaultRateLimits, day, ['defaultRateLimits']);
    }
  });

export type FileConfig = z.infer<typeof configSchema>;
export type ApiKeysConfig = FileConfig['apiKeys'];
export type McpToolConfig = z.infer<typeof toolSchema>;
/** The key settings while API keys are on. */
export type ApiKeysOn = Extract<ApiKeysConfig, { enabled: true }>;
export type KeyVariant = ApiKeysOn['variant'];
