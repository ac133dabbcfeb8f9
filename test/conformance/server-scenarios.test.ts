import { expect } from 'chai';
import { join } from 'node:path';
import { packageRoot } from '../../src/config.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { Client, signUp } from '../support/http.ts';
import { tempDir } from '../support/tmp.ts';
import { createKey, initializeMessage, rpc } from '../integration/mcp/support.ts';
import { keyProxy, node24OrSkip, runConformance } from './support.ts';

// The official conformance suite's server scenarios against /api/mcp, as an MCP client vendor runs
// them: both requirement sets, through a loopback proxy that adds a key. expected-failures.yaml
// lists the checks that need the suite's own fixture tools, resources or prompts; with it the suite
// exits non-zero when any other check fails and when a listed one starts passing (a stale entry).

const EXPECTED = join(packageRoot, 'test/conformance/expected-failures.yaml');

describe('the MCP conformance suite: server scenarios', function () {
  this.timeout(300_000);
  let node: string;
  let gw: TestGateway;
  let proxy: Awaited<ReturnType<typeof keyProxy>>;

  before(async function () {
    node = await node24OrSkip(this);
    // The suite sends a few hundred requests; the default day's quota of a key is 100.
    gw = await startTestGateway({ config: { defaultApiRateLimit: 1_000_000 } });
    const { client } = await signUp(gw.url);
    const { key } = await createKey(client);
    proxy = await keyProxy(gw.url, key);
    // The gateway loads the MCP SDK with the first MCP request (under tsx, seconds on a busy
    // machine); the suite gives some of its requests 5 s. Its checks are about the protocol, so that
    // load happens here, once, before the suite times anything.
    const first = await rpc(new Client(proxy.url), initializeMessage);
    expect(first.status, first.text).to.equal(200);
  });
  after(async () => {
    await proxy?.close();
    await gw?.stop();
  });

  for (const revision of ['2025-11-25', '2026-07-28']) {
    it(`requirement set ${revision}: every check passes but the listed fixture-dependent ones, and no listed one passes`, async () => {
      const out = tempDir('kg-conformance-');
      const run = await runConformance(node, ['server', '--url', `${proxy.url}/api/mcp`, '--requirements', revision, '--expected-failures', EXPECTED, '-o', out, '--timeout', '20000'], 240_000);
      expect(run.code, run.output.slice(-6000)).to.equal(0);
    });
  }
});
