import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { ConfigError, loadConfig, packageRoot } from '../../../src/config.ts';

// Where the counters live is one Redis setting or none; a pooled DATABASE_URL takes
// a direct URL beside it and then sends no named statements unless told to.

const load = (env: Record<string, string>) => loadConfig({ env, overrides: {} });

describe('scale-out settings', () => {
  describe('exactly one Redis setting', () => {
    it('REDIS_CLUSTER_NODES gives a cluster of host:port seeds', () => {
      expect(load({ REDIS_CLUSTER_NODES: '10.0.0.1:7000, 10.0.0.2:7001,[::1]:7002' }).redis).to.deep.equal({
        kind: 'cluster', nodes: [{ host: '10.0.0.1', port: 7000 }, { host: '10.0.0.2', port: 7001 }, { host: '::1', port: 7002 }],
      });
    });
    it('REDIS_SENTINELS with REDIS_SENTINEL_NAME gives a sentinel-watched master', () => {
      expect(load({ REDIS_SENTINELS: 's1:26379,s2:26379', REDIS_SENTINEL_NAME: 'counters' }).redis).to.deep.equal({
        kind: 'sentinel', name: 'counters', sentinels: [{ host: 's1', port: 26379 }, { host: 's2', port: 26379 }],
      });
    });
    it('REDIS_URL alone is one server; none is PostgreSQL counters', () => {
      expect(load({ REDIS_URL: 'redis://r:6379' }).redis).to.deep.equal({ kind: 'single', url: 'redis://r:6379' });
      expect(load({}).redis).to.equal(null);
    });
    const refused: [string, Record<string, string>, RegExp][] = [
      ['REDIS_URL and REDIS_CLUSTER_NODES', { REDIS_URL: 'redis://r', REDIS_CLUSTER_NODES: 'a:1' }, /^REDIS_URL, REDIS_CLUSTER_NODES: set exactly one of/],
      ['REDIS_URL and REDIS_SENTINELS', { REDIS_URL: 'redis://r', REDIS_SENTINELS: 'a:1', REDIS_SENTINEL_NAME: 'm' }, /^REDIS_URL, REDIS_SENTINELS: set exactly one/],
      ['all three', { REDIS_URL: 'redis://r', REDIS_CLUSTER_NODES: 'a:1', REDIS_SENTINELS: 'a:1', REDIS_SENTINEL_NAME: 'm' }, /^REDIS_URL, REDIS_CLUSTER_NODES, REDIS_SENTINELS:/],
      ['REDIS_SENTINELS without a name', { REDIS_SENTINELS: 'a:1' }, /REDIS_SENTINEL_NAME: required/],
      ['REDIS_SENTINEL_NAME alone', { REDIS_SENTINEL_NAME: 'm' }, /REDIS_SENTINEL_NAME: only meaningful/],
      ['a node without a port', { REDIS_CLUSTER_NODES: 'a:1,b' }, /REDIS_CLUSTER_NODES: "b" is not host:port/],
      ['a port out of range', { REDIS_CLUSTER_NODES: 'a:70000' }, /is not host:port/],
    ];
    for (const [what, env, message] of refused) {
      it(`refuses ${what}, naming them`, () => {
        expect(() => load(env)).to.throw(ConfigError, message);
      });
    }
    it('the start stops with exit code 1 and one line naming the conflict', async function () {
      this.timeout(30_000);
      const run = promisify(execFile);
      const failed = await run(process.execPath, [resolve(packageRoot, 'bin/keygate.js'), 'serve'], {
        env: { ...process.env, REDIS_URL: 'redis://127.0.0.1:1', REDIS_CLUSTER_NODES: '127.0.0.1:2', KEYGATE_CONFIG: '' },
      }).then(() => null, (e: { code: number; stderr: string }) => e);
      expect(failed?.code).to.equal(1);
      expect(failed?.stderr.trim()).to.equal('keygate: invalid configuration: REDIS_URL, REDIS_CLUSTER_NODES: set exactly one of REDIS_URL, REDIS_CLUSTER_NODES, REDIS_SENTINELS');
    });
  });

  describe('a pooled DATABASE_URL', () => {
    it('without DATABASE_DIRECT_URL the key lookup is a named statement', () => {
      expect(load({ DATABASE_URL: 'postgres://db/x' })).to.deep.include({ databaseDirectUrl: null, preparedStatements: true });
    });
    it('with DATABASE_DIRECT_URL no named statement is sent unless DATABASE_PREPARED_STATEMENTS=on', () => {
      expect(load({ DATABASE_URL: 'postgres://bouncer/x', DATABASE_DIRECT_URL: 'postgres://db/x' })).to.deep.include({ databaseDirectUrl: 'postgres://db/x', preparedStatements: false });
      expect(load({ DATABASE_URL: 'postgres://bouncer/x', DATABASE_DIRECT_URL: 'postgres://db/x', DATABASE_PREPARED_STATEMENTS: 'on' }).preparedStatements).to.equal(true);
    });
    it('refuses DATABASE_DIRECT_URL without DATABASE_URL, and a prepared-statements value other than on or off', () => {
      expect(() => load({ DATABASE_DIRECT_URL: 'postgres://db/x' })).to.throw(ConfigError, /DATABASE_DIRECT_URL: only meaningful with DATABASE_URL/);
      expect(() => load({ DATABASE_URL: 'postgres://db/x', DATABASE_PREPARED_STATEMENTS: 'yes' })).to.throw(ConfigError, /DATABASE_PREPARED_STATEMENTS: expected on or off/);
    });
  });
});
