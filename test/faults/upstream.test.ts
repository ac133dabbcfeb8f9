import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { Client, signUp } from '../support/http.ts';
import { ANSWER_BOUND_MS } from './support.ts';

// Forwarding with the upstream broken: a process of its own, frozen (SIGSTOP: the kernel still
// accepts its connections, nothing answers) and then killed. A hung upstream is 504 after
// upstream.timeoutMs, a dead one 502 at once, and the gateway's own routes do not notice either.

const UPSTREAM = `const http = require('node:http');
const server = http.createServer((req, res) => { req.resume(); req.on('end', () => res.end(JSON.stringify({ path: req.url }))); });
server.listen(0, '127.0.0.1', () => console.log('port ' + server.address().port));`;

async function startUpstream(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['-e', UPSTREAM], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((ok, fail) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /port (\d+)/.exec(out);
      if (m) ok(m[1]!);
    });
    child.once('exit', (code) => fail(new Error(`upstream exited ${code}`)));
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

const timed = async <T>(p: Promise<T>): Promise<{ value: T; ms: number }> => {
  const t = performance.now();
  const value = await p;
  return { value, ms: performance.now() - t };
};

describe('faults: the upstream', function () {
  this.timeout(60_000);
  const TIMEOUT_MS = 400;
  let upstream: { child: ChildProcess; url: string };
  let gw: TestGateway;
  let keyed: Client;
  let session: Client;
  before(async () => {
    upstream = await startUpstream();
    gw = await startTestGateway({ config: { upstream: { url: upstream.url, timeoutMs: TIMEOUT_MS } } });
    session = (await signUp(gw.url)).client;
    keyed = new Client(gw.url).withKey((await session.post('/api/api-keys', { name: 'upstream' })).body.key as string);
    expect((await keyed.get('/api/projects')).status).to.equal(200);
  });
  after(async () => {
    upstream?.child.kill('SIGCONT');
    upstream?.child.kill('SIGKILL');
    await gw?.stop();
  });

  /** The gateway's own routes, asked while forwards are failing. */
  const ownRoutesAnswer = async () => {
    expect((await session.get('/api/api-keys')).status).to.equal(200);
    expect((await keyed.get('/api/api-keys')).status).to.equal(200);
    expect((await new Client(gw.url).get('/healthz')).status).to.equal(200);
    expect((await new Client(gw.url).get('/readyz')).status).to.equal(200);
  };

  describe('when the upstream hangs (SIGSTOP)', () => {
    it('then every forward is 504 GATEWAY_TIMEOUT after upstream.timeoutMs, and the gateway\'s own routes answer meanwhile', async () => {
      upstream.child.kill('SIGSTOP');
      try {
        const forwards = Array.from({ length: 6 }, (_, i) => timed(keyed.get(`/api/projects/${i}`)));
        await ownRoutesAnswer();
        for (const { value, ms } of await Promise.all(forwards)) {
          expect(value.status).to.equal(504);
          expect(value.body.code).to.equal('GATEWAY_TIMEOUT');
          expect(ms).to.be.at.least(TIMEOUT_MS - 50).and.at.most(TIMEOUT_MS + ANSWER_BOUND_MS);
        }
      } finally {
        upstream.child.kill('SIGCONT');
      }
      // Thawed, it answers again: nothing in the gateway stayed broken.
      expect((await keyed.get('/api/projects')).status).to.equal(200);
    });
  });

  describe('when the upstream is killed', () => {
    it('then every forward is 502 BAD_GATEWAY at once, none hangs, and the gateway\'s own routes answer', async () => {
      await new Promise<void>((ok) => {
        upstream.child.once('exit', () => ok());
        upstream.child.kill('SIGKILL');
      });
      const forwards = await Promise.all(Array.from({ length: 6 }, (_, i) => timed(keyed.post(`/api/projects/${i}`, { n: i }))));
      for (const { value, ms } of forwards) {
        expect(value.status).to.equal(502);
        expect(value.body.code).to.equal('BAD_GATEWAY');
        // "At once": a refused connection is not waited on; the bound only absorbs a loaded machine.
        expect(ms).to.be.below(ANSWER_BOUND_MS);
      }
      await ownRoutesAnswer();
    });
  });
});
