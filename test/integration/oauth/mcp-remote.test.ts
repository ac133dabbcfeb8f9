import { expect } from 'chai';
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { freePort } from '../../support/free-port.ts';
import { tempDir } from '../../support/tmp.ts';
import { until } from '../../support/until.ts';
import { textOf } from '../mcp/support.ts';
import { allowByConsentForm } from './consent-form.ts';

// mcp-remote, the stdio bridge many desktop MCP hosts run, as a subprocess given only the gateway's
// MCP URL. It registers itself (native, a loopback callback), then opens the authorization URL in
// a browser: its opener honours $BROWSER, here a script that writes the URL down. The test plays
// the person (the consent page's Allow form) and the browser's last hop (the code to mcp-remote's
// own callback listener); mcp-remote swaps the code and the MCP session goes through it. A second
// run, its stored access token expired, refreshes: no browser, a rotated refresh token.

const MCP_REMOTE = resolve('node_modules/.bin/mcp-remote');

describe('OAuth for MCP clients: mcp-remote', function () {
  this.timeout(90_000);
  let gw: TestGateway;
  let mcp: McpClient | undefined;
  before(async () => {
    gw = await startTestGateway();
  });
  after(async () => {
    await mcp?.close();
    await gw?.stop();
  });

  it('connects with the URL alone: registration, the browser consent, the token, a tool call, then a refresh', async () => {
    const person = await signUp(gw.url);
    const dir = tempDir('kg-mcp-remote-');
    const opened = join(dir, 'opened.txt');
    const opener = join(dir, 'browser.sh');
    writeFileSync(opener, `#!/bin/sh\nprintf '%s\\n' "$1" >> '${opened}'\n`);
    chmodSync(opener, 0o755);
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '', HOME: dir, MCP_REMOTE_CONFIG_DIR: join(dir, 'auth'), BROWSER: opener,
    };
    const callbackPort = await freePort();
    let stderr = '';
    const bridge = () => {
      const transport = new StdioClientTransport({ command: MCP_REMOTE, args: [`${gw.url}/api/mcp`, String(callbackPort), '--transport', 'http-only', '--auth-timeout', '60'], env, stderr: 'pipe' });
      transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
      return transport;
    };
    const transport = bridge();
    mcp = new McpClient({ name: 'behind-mcp-remote', version: '0' });
    const connected = mcp.connect(transport);

    await until('mcp-remote opens the authorization URL', () => existsSync(opened) && readFileSync(opened, 'utf8').trim() !== '', 60_000).catch((e: Error) => {
      throw new Error(`${e.message}\n${stderr}`);
    });
    const authorize = new URL(readFileSync(opened, 'utf8').trim().split('\n')[0]!);
    expect(authorize.origin + authorize.pathname).to.equal(`${gw.url}/oauth/authorize`);
    expect(authorize.searchParams.get('redirect_uri')).to.match(new RegExp(`^http://localhost:${callbackPort}/`));
    const landed = await allowByConsentForm(gw.url, person.client, authorize);
    expect(landed.searchParams.get('code'), landed.href).to.be.a('string');
    // The browser's last hop: mcp-remote's own listener takes the code.
    const delivered = await new Client(landed.origin).get(landed.pathname + landed.search);
    expect(delivered.status, delivered.text).to.equal(200);

    await connected.catch((e: Error) => {
      throw new Error(`${e.message}\n${stderr}`);
    });
    const me = JSON.parse(textOf(await mcp.callTool({ name: 'whoami', arguments: {} })));
    expect(me.user.email).to.equal(person.user.email);
    expect(me.grant.clientName).to.equal('MCP CLI Proxy');
    await mcp.close();

    // An hour on, as mcp-remote sees it: the stored access token has expired (and is no longer
    // one the gateway takes), so the next run must refresh before its first request.
    const store = join(dir, 'auth', 'mcp-remote-v1');
    const tokensFile = join(store, readdirSync(store).find((f) => f.endsWith('_tokens.json'))!);
    const first = JSON.parse(readFileSync(tokensFile, 'utf8')) as { access_token: string; refresh_token: string };
    expect(first.refresh_token, 'a refresh token was stored').to.be.a('string');
    writeFileSync(tokensFile, JSON.stringify({ ...first, access_token: `${first.access_token}x`, expires_in: 0, expires_at: Date.now() - 60_000 }));
    mcp = new McpClient({ name: 'behind-mcp-remote', version: '0' });
    await mcp.connect(bridge()).catch((e: Error) => {
      throw new Error(`${e.message}\n${stderr}`);
    });
    const again = JSON.parse(textOf(await mcp.callTool({ name: 'whoami', arguments: {} })));
    expect(again.grant.id).to.equal(me.grant.id);
    expect(readFileSync(opened, 'utf8').trim().split('\n'), 'no second browser visit').to.have.length(1);
    const second = JSON.parse(readFileSync(tokensFile, 'utf8')) as { refresh_token: string };
    expect(second.refresh_token, 'rotated').to.be.a('string').and.not.equal(first.refresh_token);
  });
});
