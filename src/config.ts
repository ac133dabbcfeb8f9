import { readFileSync, existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import type { ApiKeysOn, FileConfig, KeyVariant, McpToolConfig } from './config/schema.ts';
import { ConfigError, parseConfig } from './config/parse.ts';
import { defaultMcpTools } from './config/mcp-tools.ts';
import { redisSettingFrom, type RedisSetting } from './config/redis-setting.ts';

// The only reader of process.env and keygate.yaml. Everything else is handed a Config. The schema,
// its error messages and the Redis topologies live in src/config/; importers use this file alone.

export { RATE_WINDOWS, configSchema } from './config/schema.ts';
export type { RateWindow, RateLimitRule, FileConfig, ApiKeysConfig, McpToolConfig, ApiKeysOn, KeyVariant } from './config/schema.ts';
export { ConfigError, parseConfig } from './config/parse.ts';
export { defaultMcpTools } from './config/mcp-tools.ts';
export { parseHostPorts, redisSettingFrom, type RedisSetting, type HostPort } from './config/redis-setting.ts';

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
  /**
   * A direct PostgreSQL URL for what needs a session of its own (LISTEN, migrations, policy apply)
   * when DATABASE_URL is a transaction pooler.
   */
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
  if (env.DATABASE_DIRECT_URL && !env.DATABASE_URL) {
    throw new ConfigError('DATABASE_DIRECT_URL: only meaningful with DATABASE_URL (the pooled URL)');
  }
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