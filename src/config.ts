import { readFileSync, existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

// The only reader of process.env and keygate.yaml. Everything else is handed a Config.

// One wording for every count in the file, whichever check failed (type, fraction or sign).
const POSITIVE_INT = { error: 'expected a positive integer' };
const positiveInt = z.number(POSITIVE_INT).int(POSITIVE_INT).positive(POSITIVE_INT);
/** A span written as a number and a unit: `500ms`, `1s`, `5m`, `2h`, `5d`. */
const duration = z.string().regex(/^[1-9][0-9]{0,8}(ms|s|m|h|d)$/, 'a duration such as 5s, 5m, 2h or 5d');
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
      .object({ model: z.string().default('policies/model.conf'), file: z.string().nullable().default(null), scopes: z.string().default('policies/scopes.yaml') })
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
        retrySchedule: z.array(duration).min(1).max(20).default(['5s', '5m', '30m', '2h', '5h', '10h', '10h']),
        // An endpoint whose deliveries have all failed this long is disabled.
        disableAfter: duration.default('5d'),
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

/**
 * What the gateway serves, derived once from the file: read this rather than the raw switches, so
 * that a path or a feature's state has one spelling. A new feature or path gets its line here.
 */
export interface Surface {
  /** The API prefix, and the MCP endpoint beneath it. */
  paths: { api: string; mcp: string };
  /** OAuth for MCP clients runs exactly while the MCP server does (its tokens work nowhere else). */
  features: { apiKeys: boolean; ai: boolean; mcp: boolean; oauth: boolean };
  /** The key variant whose policy applies; A while keys are off (its policy file is then the default). */
  variant: KeyVariant;
}

/** The key settings while API keys are on, null while they are off: the one place that decides it. */
export const keysOn = (config: Pick<FileConfig, 'apiKeys'>): ApiKeysOn | null => (config.apiKeys.enabled ? config.apiKeys : null);

export function surfaceOf(file: Pick<FileConfig, 'apiPrefix' | 'apiKeys' | 'ai' | 'mcpServer'>): Surface {
  const keys = keysOn(file);
  return {
    paths: { api: file.apiPrefix, mcp: `${file.apiPrefix}/mcp` },
    features: { apiKeys: keys !== null, ai: file.ai.enabled, mcp: file.mcpServer.enabled, oauth: file.mcpServer.enabled },
    variant: keys?.variant ?? 'A',
  };
}

export interface Config extends Omit<FileConfig, 'mcpServer' | 'redis'> {
  /** keygate.yaml's `redis:` (the replicas each counter write waits for). */
  redisWait: FileConfig['redis'];
  surface: Surface;
  mcpServer: { enabled: boolean; tools: McpToolConfig[]; allowedHosts: string[]; allowedOrigins: string[] };
  policy: { model: string; file: string; scopes: string };
  host: string;
  port: number;
  databaseUrl: string | null;
  /** A direct PostgreSQL URL for what needs a session of its own (LISTEN, migrations, policy apply) when DATABASE_URL is a transaction pooler. */
  databaseDirectUrl: string | null;
  /** Named prepared statements on DATABASE_URL: off by default behind a pooler (DATABASE_DIRECT_URL set). */
  preparedStatements: boolean;
  redisUrl: string | null;
  /** Where the counters live: one of REDIS_URL, REDIS_CLUSTER_NODES, REDIS_SENTINELS; null: PostgreSQL. */
  redis: RedisSetting | null;
  contentApiKey: string | null;
  logLevel: string;
  configPath: string | null;
}

// Where the shipped policies/ and migrations/ live, whatever the working directory.
export const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export class ConfigError extends Error {
  override name = 'ConfigError';
}

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
    { name: 'update_automation', description: 'Update an AI automation', method: 'PATCH', path: `${base}/{id}`, inputSchema: obj({ id, ...body }, ['id']) },
    { name: 'delete_automation', description: 'Delete an AI automation', method: 'DELETE', path: `${base}/{id}`, inputSchema: obj({ id }, ['id']) },
    { name: 'run_automation', description: 'Run an AI automation now', method: 'POST', path: `${base}/{id}/run`, inputSchema: obj({ id }, ['id']) },
  ];
}

type Issue = z.core.$ZodIssue;

// A literal field that did not match (`enabled: false` against `true`): the branch is not the one
// the file meant, so its other complaints are noise.
const missesDiscriminant = (i: Issue): boolean => i.code === 'invalid_value' && i.values.length === 1 && i.path.length === 1;

/**
 * The issue to report and its full path: inside a union, the branch whose discriminants match the
 * input, and in it the issue deepest in the file, so `apiKeys.maxKeysPerUser: ten` names that field
 * rather than the union. A union no branch of which matches is reported as itself.
 */
function deepestIssue(issue: Issue, base: readonly PropertyKey[] = []): { issue: Issue; path: PropertyKey[] } {
  const path = [...base, ...issue.path];
  if (issue.code !== 'invalid_union') return { issue, path };
  const branch = issue.errors.find((b) => b.length > 0 && !b.some(missesDiscriminant));
  if (!branch) return { issue, path };
  const deepest = branch.map((i) => deepestIssue(i, path)).sort((a, b) => b.path.length - a.path.length);
  return deepest[0]!;
}

function describeIssue(top: Issue): string {
  const { issue, path: at } = deepestIssue(top);
  const path = at.length ? at.map(String).join('.') : '(root)';
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((k) => (path === '(root)' ? k : `${path}.${k}`));
    return `${keys.join(', ')}: unknown key${keys.length > 1 ? 's' : ''}`;
  }
  // A discriminated union whose discriminant names no branch (`variant: C`).
  if (issue.code === 'invalid_union' && issue.discriminator !== undefined && 'options' in issue && issue.options) {
    const options = issue.options.filter((o) => o !== undefined && o !== null).map(String);
    return `${path}: expected ${options.join(' or ')}`;
  }
  if (issue.code === 'invalid_union' && path.endsWith('apiKeys')) {
    return `${path}: expected { enabled: false } or { enabled: true, variant: A|B, ... } (Variant B takes only enabled, variant and prefix)`;
  }
  return `${path}: ${issue.message}`;
}

// Variant B refuses the Variant A fields; zod reports that as a union failure, so look for the
// clearer cause first.
function variantBMisuse(raw: unknown): string | null {
  if (!raw || typeof raw !== 'object') return null;
  const keys = (raw as { apiKeys?: unknown }).apiKeys;
  if (!keys || typeof keys !== 'object') return null;
  const k = keys as Record<string, unknown>;
  if (k.variant !== 'B') return null;
  for (const f of ['maxKeysPerUser', 'maxCreatesPerDay']) {
    if (f in k) return `apiKeys.${f}: not allowed under variant B`;
  }
  return null;
}

export function parseConfig(raw: unknown): FileConfig {
  const result = configSchema.safeParse(raw ?? {});
  if (!result.success) {
    const first = result.error.issues[0];
    throw new ConfigError(variantBMisuse(raw) ?? (first ? describeIssue(first) : 'invalid configuration'));
  }
  return result.data;
}

export interface LoadOptions {
  argv?: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  overrides?: unknown;
}

function configPathFrom(argv: string[], env: NodeJS.ProcessEnv, cwd: string): string | null {
  const i = argv.indexOf('--config');
  const flag = i >= 0 ? argv[i + 1] : argv.find((a) => a.startsWith('--config='))?.slice('--config='.length);
  if (flag) return resolve(cwd, flag);
  if (env.KEYGATE_CONFIG) return resolve(cwd, env.KEYGATE_CONFIG);
  const local = resolve(cwd, 'keygate.yaml');
  return existsSync(local) ? local : null;
}

// The Redis topologies are described here, not in src/store/redis.ts: config may be used by anything and
// imports nothing above it, so the client that connects to a setting depends on it, not the other way.
export type RedisSetting =
  | { kind: 'single'; url: string }
  | { kind: 'cluster'; nodes: HostPort[] }
  | { kind: 'sentinel'; sentinels: HostPort[]; name: string };

export interface HostPort { host: string; port: number }

/** `host:port,host:port` as the environment spells it; throws naming the bad entry. */
export function parseHostPorts(text: string, variable: string): HostPort[] {
  const out = text.split(',').map((s) => s.trim()).filter(Boolean).map((entry) => {
    const m = /^(\[[^\]]+\]|[^:\s]+):(\d{1,5})$/.exec(entry);
    const port = m ? Number(m[2]) : NaN;
    if (!m || port < 1 || port > 65535) throw new Error(`${variable}: "${entry}" is not host:port`);
    return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
  });
  if (!out.length) throw new Error(`${variable}: no host:port given`);
  return out;
}

/** Exactly one Redis topology, or none; several at once would leave it unclear where the counters live. */
export function redisSettingFrom(env: NodeJS.ProcessEnv): RedisSetting | null {
  const set = ['REDIS_URL', 'REDIS_CLUSTER_NODES', 'REDIS_SENTINELS'].filter((v) => env[v]);
  if (set.length > 1) throw new ConfigError(`${set.join(', ')}: set exactly one of REDIS_URL, REDIS_CLUSTER_NODES, REDIS_SENTINELS`);
  if (env.REDIS_SENTINEL_NAME && !env.REDIS_SENTINELS) throw new ConfigError('REDIS_SENTINEL_NAME: only meaningful with REDIS_SENTINELS');
  try {
    if (env.REDIS_URL) return { kind: 'single', url: env.REDIS_URL };
    if (env.REDIS_CLUSTER_NODES) return { kind: 'cluster', nodes: parseHostPorts(env.REDIS_CLUSTER_NODES, 'REDIS_CLUSTER_NODES') };
    if (env.REDIS_SENTINELS) {
      if (!env.REDIS_SENTINEL_NAME) throw new Error('REDIS_SENTINEL_NAME: required with REDIS_SENTINELS (the monitored master\'s name)');
      return { kind: 'sentinel', sentinels: parseHostPorts(env.REDIS_SENTINELS, 'REDIS_SENTINELS'), name: env.REDIS_SENTINEL_NAME };
    }
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
  return null;
}

function preparedStatementsFrom(env: NodeJS.ProcessEnv): boolean {
  const v = env.DATABASE_PREPARED_STATEMENTS;
  // A transaction pooler hands each transaction any server connection, where a statement named on
  // another one does not exist; so behind one (a direct URL given) they are off unless asked for.
  if (v === undefined || v === '') return !env.DATABASE_DIRECT_URL;
  if (v === 'on' || v === 'off') return v === 'on';
  throw new ConfigError('DATABASE_PREPARED_STATEMENTS: expected on or off');
}

export function loadConfig(opts: LoadOptions = {}): Config {
  const env = opts.env ?? process.env;
  const cwd = opts.cwd ?? process.cwd();
  const path = configPathFrom(opts.argv ?? [], env, cwd);
  let raw: unknown = opts.overrides ?? {};
  if (path && opts.overrides === undefined) {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      throw new ConfigError(`${path}: cannot be read`);
    }
    try {
      raw = parseYaml(text) ?? {};
    } catch (e) {
      throw new ConfigError(`${path}: not valid YAML (${(e as Error).message.split('\n')[0]})`);
    }
  }
  const file = parseConfig(raw);
  if (env.DATABASE_DIRECT_URL && !env.DATABASE_URL) throw new ConfigError('DATABASE_DIRECT_URL: only meaningful with DATABASE_URL (the pooled URL)');
  const port = env.PORT ? Number(env.PORT) : 3000;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(`PORT: not a port number`);
  const surface = surfaceOf(file);
  // Paths written in the file are relative to it; the defaults point at the shipped files.
  const fromFile = (p: string) => resolve(path ? dirname(path) : cwd, p);
  const rawPolicy = (raw as { policy?: { model?: unknown; file?: unknown; scopes?: unknown } } | null)?.policy ?? {};
  return {
    ...file,
    surface,
    mcpServer: { ...file.mcpServer, tools: file.mcpServer.tools ?? defaultMcpTools(file.apiPrefix) },
    policy: {
      model: rawPolicy.model ? fromFile(file.policy.model) : resolve(packageRoot, file.policy.model),
      file: file.policy.file ? fromFile(file.policy.file) : resolve(packageRoot, `policies/variant-${surface.variant.toLowerCase()}.csv`),
      scopes: rawPolicy.scopes ? fromFile(file.policy.scopes) : resolve(packageRoot, file.policy.scopes),
    },
    host: env.HOST || '127.0.0.1',
    port,
    databaseUrl: env.DATABASE_URL || null,
    databaseDirectUrl: env.DATABASE_DIRECT_URL || null,
    preparedStatements: preparedStatementsFrom(env),
    redisUrl: env.REDIS_URL || null,
    redis: redisSettingFrom(env),
    redisWait: file.redis,
    contentApiKey: env.CONTENT_API_KEY || null,
    logLevel: env.LOG_LEVEL || 'info',
    configPath: path,
  };
}
