import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { parse } from 'yaml';
import { packageRoot } from '../../src/config.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { launchBrowser, openContext, signedUpUser, type SignedUp } from '../support/browser.ts';
import { tempDir } from '../support/tmp.ts';
import { registerClient } from '../integration/oauth/support.ts';
import { node24OrSkip, startConformance, type Running } from './support.ts';

// The official conformance suite's authorization scenarios against keygate's authorization server,
// as a client vendor runs them: the metadata endpoint, then an authorization code grant whose
// consent a person gives in Chromium. The suite's `authorization` command takes no baseline file,
// so this test reads its checks.json and holds them to the `authorization:` section of
// expected-failures.yaml: a failure (or warning, as the suite's own baseline counts it) outside the
// section fails, and so does a listed check that passes.

const EXPECTED = join(packageRoot, 'test/conformance/expected-failures.yaml');
const SCENARIOS = ['authorization-server-metadata-endpoint', 'authorization-code-grant'];

interface Check { id: string; status: string; errorMessage?: string; description?: string }

/** A loopback port nothing listens on now, for the suite's callback listener. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((ok) => server.close(() => ok()));
  return port;
}

/** The `authorization:` entries (scenario:check-id) of the expected-failures file. */
function expectedFailures(): Set<string> {
  const doc = (parse(readFileSync(EXPECTED, 'utf8')) ?? {}) as { authorization?: unknown };
  const list = doc.authorization ?? [];
  if (!Array.isArray(list) || list.some((e) => typeof e !== 'string' || !/^[^:\s]+:[^:\s]+$/.test(e))) {
    throw new Error('expected-failures.yaml: `authorization` must be a list of scenario:check-id entries');
  }
  return new Set(list as string[]);
}

/** Each scenario's checks, from the directories the suite wrote under `out` (authorization-server-<scenario>-<time>). */
function readChecks(out: string): Map<string, Check[]> {
  const found = new Map<string, Check[]>();
  for (const dir of readdirSync(out)) {
    const scenario = SCENARIOS.find((s) => dir.startsWith(`authorization-server-${s}-`));
    if (scenario) found.set(scenario, JSON.parse(readFileSync(join(out, dir, 'checks.json'), 'utf8')) as Check[]);
  }
  return found;
}

describe('the MCP conformance suite: authorization scenarios, consent in Chromium', function () {
  this.timeout(240_000);
  let node: string;
  let gw: TestGateway;
  let browser: Browser;
  let person: SignedUp;
  let suite: Running | undefined;

  before(async function () {
    node = await node24OrSkip(this);
    [gw, browser] = await Promise.all([startTestGateway(), launchBrowser()]);
    person = await signedUpUser(gw);
  });
  after(async () => {
    // The suite waits five minutes for its callback; it is never left waiting.
    suite?.kill();
    await browser?.close();
    await gw?.stop();
  });

  it('both scenarios pass every check but the listed ones, and no listed one passes', async () => {
    const port = await freePort();
    const { clientId } = await registerClient(gw.url, 'Conformance suite', [`http://127.0.0.1:${port}/callback`]);
    const out = tempDir('kg-conformance-auth-');
    suite = startConformance(node, ['authorization', '--url', gw.url, '--client-id', clientId, '--resource', `${gw.url}/api/mcp`, '-p', String(port), '-o', out], 180_000);

    // The suite prints the authorization request it wants a person to open; its request has no scope.
    const [authorizeUrl] = await suite.waitFor(new RegExp(`^${gw.url.replace(/[.:/]/g, '\\$&')}/oauth/authorize\\?\\S+$`, 'm'), 60_000);
    const tab = await openContext(browser, gw.url, { sessionCookie: person.cookie });
    try {
      await tab.page.goto(authorizeUrl);
      await tab.page.waitForURL(/\/oauth\/consent\//, { timeout: 20_000 });
      await tab.page.getByRole('button', { name: 'Allow' }).click();
      await tab.page.waitForURL((u) => u.href.startsWith(`http://127.0.0.1:${port}/callback`), { timeout: 20_000 }).catch(async (e) => {
        throw new Error(`${(e as Error).message}\n${tab.page.url()}\n${(await tab.page.content()).slice(0, 2000)}`);
      });
      expect(tab.problems).to.deep.equal([]);
    } finally {
      await tab.close();
    }

    // With the callback heard the suite swaps the code for a token and exits on its own.
    const bound = new Promise<never>((_, fail) => setTimeout(() => fail(new Error(`the suite did not exit within 60 s:\n${suite!.output().slice(-4000)}`)), 60_000).unref());
    const run = await Promise.race([suite.exited, bound]);
    const log = run.output.slice(-6000);

    const results = readChecks(out);
    expect([...results.keys()].sort(), log).to.deep.equal([...SCENARIOS].sort());
    const expected = expectedFailures();
    const unexpected: string[] = [];
    const stale: string[] = [];
    for (const [scenario, checks] of results) {
      expect(checks, `${scenario} ran no check\n${log}`).to.not.be.empty;
      for (const check of checks) {
        const key = `${scenario}:${check.id}`;
        const failed = check.status === 'FAILURE' || check.status === 'WARNING';
        if (failed && !expected.has(key)) unexpected.push(`${key} ${check.status} ${check.errorMessage ?? check.description ?? ''}`);
        if (!failed && check.status === 'SUCCESS' && expected.has(key)) stale.push(key);
      }
    }
    expect(unexpected, `failing checks not in expected-failures.yaml:\n${log}`).to.deep.equal([]);
    expect(stale, 'listed in expected-failures.yaml but passing now: remove the entries').to.deep.equal([]);
    const grant = results.get('authorization-code-grant')!;
    expect(grant.map((c) => c.status), log).to.include('SUCCESS');
  });
});
