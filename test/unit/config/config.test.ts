import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { tempDir } from '../../support/tmp.ts';
import { join } from 'node:path';
import { ConfigError, loadConfig, parseConfig, packageRoot } from '../../../src/config.ts';

describe('configuration', () => {
  describe('defaults (an empty file)', () => {
    const c = loadConfig({ env: {}, overrides: {} });
    const cases: [string, unknown, unknown][] = [
      ['apiPrefix', c.apiPrefix, '/api'],
      ['publicUrl', c.publicUrl, null],
      ['apiKeys', c.apiKeys, { enabled: true, variant: 'A', prefix: 'key_', maxKeysPerUser: 10, maxCreatesPerDay: 20 }],
      ['ai', c.ai, { enabled: false }],
      ['mcpServer.enabled', c.mcpServer.enabled, true],
      ['billingScope', c.billingScope, 'user'],
      ['defaultApiRateLimit', c.defaultApiRateLimit, 100],
      ['defaultPlan', c.defaultPlan, 'free'],
      ['plans', c.plans, { free: {} }],
      ['upstream', c.upstream, { url: null, timeoutMs: 30_000, maxConcurrentPerCaller: 32 }],
      ['policy.model', c.policy.model, join(packageRoot, 'policies/model.conf')],
      ['policy.file', c.policy.file, join(packageRoot, 'policies/variant-a.csv')],
      ['auth', c.auth, { signUp: true, sessionTtlDays: 30 }],
      ['keyCache', c.keyCache, { maxBytes: 33_554_432, unknownMaxBytes: 2_097_152 }],
      ['host', c.host, '127.0.0.1'],
      ['port', c.port, 3000],
      ['databaseUrl', c.databaseUrl, null],
      ['redisUrl', c.redisUrl, null],
    ];
    for (const [name, actual, expected] of cases) {
      it(`${name} defaults to ${JSON.stringify(expected)}`, () => expect(actual).to.deep.equal(expected));
    }
    it('mcpServer.tools defaults to the automation tools under the prefix', () => {
      expect(c.mcpServer.tools.map((t) => t.name)).to.include.members(['list_automations', 'create_automation', 'run_automation']);
      expect(c.mcpServer.tools.every((t) => t.path.startsWith('/api/ai/automations'))).to.equal(true);
    });
    it('Variant B picks policies/variant-b.csv', () => {
      expect(loadConfig({ env: {}, overrides: { apiKeys: { enabled: true, variant: 'B' } } }).policy.file).to.equal(join(packageRoot, 'policies/variant-b.csv'));
    });
    it('apiKeys without enabled means enabled', () => {
      expect(parseConfig({ apiKeys: { maxKeysPerUser: 3 } }).apiKeys).to.deep.include({ enabled: true, maxKeysPerUser: 3 });
    });
  });

  describe('invalid files stop the start with a message naming the field', () => {
    const cases: [string, unknown, RegExp][] = [
      ['an unknown top-level key', { apiPrefx: '/api' }, /^apiPrefx: unknown key/],
      ['an unknown nested key', { auth: { signup: true } }, /^auth\.signup: unknown key/],
      ['Variant A fields under Variant B', { apiKeys: { enabled: true, variant: 'B', maxKeysPerUser: 3 } }, /^apiKeys\.maxKeysPerUser: not allowed under variant B/],
      ['maxCreatesPerDay under Variant B', { apiKeys: { enabled: true, variant: 'B', maxCreatesPerDay: 3 } }, /^apiKeys\.maxCreatesPerDay: not allowed under variant B/],
      ['fields beside enabled: false', { apiKeys: { enabled: false, prefix: 'x_' } }, /^apiKeys/],
      ['an unknown variant', { apiKeys: { enabled: true, variant: 'C' } }, /^apiKeys/],
      ['a zero maxKeysPerUser', { apiKeys: { maxKeysPerUser: 0 } }, /^apiKeys/],
      ['a prefix with a dash', { apiKeys: { prefix: 'my-key' } }, /^apiKeys/],
      ['a negative defaultApiRateLimit', { defaultApiRateLimit: -1 }, /^defaultApiRateLimit: /],
      ['a fractional plan limit', { plans: { free: { apiRateLimit: 1.5 } } }, /^plans\.free\.apiRateLimit: /],
      ['an undefined defaultPlan', { defaultPlan: 'gold' }, /^defaultPlan: plan "gold" is not defined/],
      ['a bad billingScope', { billingScope: 'team' }, /^billingScope: /],
      ['a non-URL upstream', { upstream: { url: 'not a url' } }, /^upstream\.url: /],
      ['a prefix without a slash', { apiPrefix: 'api' }, /^apiPrefix: /],
      ['a key cache under 1 MiB', { keyCache: { maxBytes: 1000 } }, /^keyCache\.maxBytes: at least 1048576/],
      ['a key cache size in words', { keyCache: { maxBytes: '32MB' } }, /^keyCache\.maxBytes: /],
      ['an unknown key cache field', { keyCache: { entries: 10 } }, /^keyCache\.entries: unknown key/],
      ['a tool without a path', { mcpServer: { tools: [{ name: 't', method: 'GET' }] } }, /^mcpServer\.tools\.0\.path: /],
      // Inside the apiKeys union: the branch the discriminants pick, and its deepest field.
      ['a word for maxKeysPerUser', { apiKeys: { maxKeysPerUser: 'ten' } }, /^apiKeys\.maxKeysPerUser: expected a positive integer$/],
      ['a word for maxKeysPerUser under variant A', { apiKeys: { enabled: true, variant: 'A', maxKeysPerUser: 'ten' } }, /^apiKeys\.maxKeysPerUser: expected a positive integer$/],
      ['a fractional maxCreatesPerDay', { apiKeys: { maxCreatesPerDay: 2.5 } }, /^apiKeys\.maxCreatesPerDay: expected a positive integer$/],
      ['a zero maxLifetimeDays under variant B', { apiKeys: { variant: 'B', maxLifetimeDays: 0 } }, /^apiKeys\.maxLifetimeDays: expected a positive integer$/],
      ['a variant that is neither A nor B', { apiKeys: { variant: 'C' } }, /^apiKeys\.variant: expected A or B$/],
      ['a prefix beside enabled: false', { apiKeys: { enabled: false, prefix: 'x_' } }, /^apiKeys\.prefix: unknown key$/],
      ['an enabled that is not a boolean', { apiKeys: { enabled: 'yes' } }, /^apiKeys: expected \{ enabled: false \} or/],
    ];
    for (const [what, raw, message] of cases) {
      it(`${what}`, () => {
        expect(() => parseConfig(raw)).to.throw(ConfigError, message);
      });
    }

    it('a YAML syntax error names the file', () => {
      const dir = tempDir('kg-cfg-');
      writeFileSync(join(dir, 'keygate.yaml'), 'apiKeys: [unclosed\n');
      expect(() => loadConfig({ env: {}, cwd: dir })).to.throw(ConfigError, /keygate\.yaml: not valid YAML/);
    });
  });

  describe('where the file and environment come from', () => {
    it('reads keygate.yaml from the working directory, KEYGATE_CONFIG, then --config, later winning', () => {
      const dir = tempDir('kg-cfg-');
      writeFileSync(join(dir, 'keygate.yaml'), 'defaultApiRateLimit: 5\n');
      writeFileSync(join(dir, 'other.yaml'), 'defaultApiRateLimit: 6\n');
      writeFileSync(join(dir, 'third.yaml'), 'defaultApiRateLimit: 7\n');
      expect(loadConfig({ env: {}, cwd: dir }).defaultApiRateLimit).to.equal(5);
      expect(loadConfig({ env: { KEYGATE_CONFIG: 'other.yaml' }, cwd: dir }).defaultApiRateLimit).to.equal(6);
      expect(loadConfig({ env: { KEYGATE_CONFIG: 'other.yaml' }, cwd: dir, argv: ['serve', '--config', 'third.yaml'] }).defaultApiRateLimit).to.equal(7);
    });

    it('takes DATABASE_URL, REDIS_URL, HOST, PORT, CONTENT_API_KEY and LOG_LEVEL from the environment', () => {
      const c = loadConfig({ env: { DATABASE_URL: 'postgres://x/y', REDIS_URL: 'redis://r', HOST: '0.0.0.0', PORT: '8080', CONTENT_API_KEY: 's3cret', LOG_LEVEL: 'warn' }, overrides: {} });
      expect(c).to.deep.include({ databaseUrl: 'postgres://x/y', redisUrl: 'redis://r', host: '0.0.0.0', port: 8080, contentApiKey: 's3cret', logLevel: 'warn' });
    });

    it('refuses a PORT that is not a port', () => {
      expect(() => loadConfig({ env: { PORT: 'eighty' }, overrides: {} })).to.throw(ConfigError, /^PORT: /);
    });
  });
});
