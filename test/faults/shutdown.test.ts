import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { packageRoot } from '../../src/config.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { startEcho, type Echo } from '../support/echo.ts';
import { until } from '../support/engines.ts';
import { Client, signUp } from '../support/http.ts';
import { startTestGateway } from '../support/gateway.ts';
import { tempDir } from '../support/tmp.ts';
import { RawSocket } from '../integration/hostile/support.ts';
import { SHUTDOWN_GRACE_MS, SIGNAL_ECHO_MS } from '../../src/shutdown.ts';

// SIGTERM/SIGINT stop accepting, /readyz answers 503 at once, requests in flight
// (forwarded ones included) finish, buffered writes are flushed, the pools close, exit 0 — and
// `npm start` delivers the signal to the server itself, leaving no process behind.

/** Every process below `pid`, read from /proc (Linux). */
function descendants(pid: number): number[] {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
  return children.flatMap((c) => [c, ...descendants(c)]);
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const refuses = (url: string) => new Promise<boolean>((ok) => {
  const u = new URL(url);
  const s = connect(Number(u.port), u.hostname, () => (s.destroy(), ok(false)));
  s.on('error', () => ok(true));
});

function outputOf(child: ChildProcess): { text: () => string; waitFor(pattern: RegExp, ms: number): Promise<string> } {
  let seen = '';
  const waiters: (() => void)[] = [];
  const onData = (d: Buffer) => {
    seen += d.toString();
    waiters.forEach((w) => w());
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  return {
    text: () => seen,
    waitFor: (pattern, ms) => new Promise((ok, fail) => {
      const timer = setTimeout(() => fail(new Error(`no ${pattern} within ${ms} ms; output:\n${seen}`)), ms);
      const check = () => {
        const m = pattern.exec(seen);
        if (m) {
          clearTimeout(timer);
          ok(m[1] ?? m[0]);
        }
      };
      waiters.push(check);
      check();
    }),
  };
}

describe('faults: stopping on a signal', function () {
  this.timeout(120_000);

  describe('when `npm start` gets SIGTERM while a forwarded request is in flight', () => {
    let db: TestDatabase;
    let echo: Echo;
    before(async () => {
      db = await createTestDatabase('kg_stop');
      echo = await startEcho();
    });
    after(async () => {
      await echo?.close();
      await db?.drop();
    });

    it('then it refuses new connections, answers /readyz 503, finishes the request, flushes last use and exits 0 with no process left', async () => {
      const dir = tempDir('kg-stop-');
      writeFileSync(join(dir, 'keygate.yaml'), `upstream:\n  url: ${echo.url}\n`);
      const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: db.url, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', KEYGATE_CONFIG: join(dir, 'keygate.yaml') };
      delete env.REDIS_URL;
      const npm = spawn('npm', ['start', '--silent'], { cwd: packageRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
      const out = outputOf(npm);
      const exited = new Promise<number | null>((ok) => npm.once('exit', (code) => ok(code)));
      let tree: number[] = [];
      try {
        const url = await out.waitFor(/listening on (http:\/\/\S+)\n/, 90_000);
        tree = descendants(npm.pid!);
        expect(tree, 'the server runs below npm').to.not.be.empty;
        const { client: session } = await signUp(url);
        const created = await session.post('/api/api-keys', { name: 'in flight' });
        const keyId = created.body.id as string;
        const keyed = new Client(url).withKey(created.body.key as string);

        // A request still sending its headers when the signal comes is in flight too. Its first
        // bytes go out before the held request is even sent, so the server has read them by the
        // time the upstream holds that one.
        const readiness = await RawSocket.open(url);
        readiness.socket.write(`GET /readyz HTTP/1.1\r\nHost: ${new URL(url).host}\r\n`);
        const inFlight = keyed.get('/api/hold/report');
        await echo.untilHeld(1, 10_000);

        npm.kill('SIGTERM');
        await out.waitFor(/SIGTERM: stopping/, 10_000);
        await until('new connections refused', () => refuses(url), 5_000, 50);

        readiness.socket.write('\r\n');
        await until('the /readyz answer', async () => readiness.received.includes('\r\n\r\n{'), 5_000, 20);
        expect(readiness.received).to.match(/^HTTP\/1\.1 503 /);
        expect(readiness.received.toLowerCase()).to.include('connection: close');
        expect(readiness.received).to.include('"accepting":"unavailable"');

        expect(alive(tree[tree.length - 1]!), 'still finishing the held request').to.equal(true);
        echo.releaseHeld();
        const answered = await inFlight;
        expect(answered.status).to.equal(200);
        expect(answered.body.path).to.equal('/api/hold/report');

        expect(await exited).to.equal(0);
        for (const pid of tree) expect(alive(pid), `process ${pid} left behind`).to.equal(false);

        const check = new pg.Client({ connectionString: db.url });
        await check.connect();
        try {
          const { rows } = await check.query<{ last_used_at: Date | null }>('SELECT last_used_at FROM apikeys WHERE id = $1', [keyId]);
          expect(rows[0]!.last_used_at).to.be.an.instanceOf(Date);
          // The pools were closed: no session of the gateway's is left on the server.
          const { rows: sessions } = await check.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [db.name]);
          expect(Number(sessions[0]!.n)).to.equal(0);
        } finally {
          await check.end();
        }
      } finally {
        if (npm.exitCode === null) npm.kill('SIGKILL');
        for (const pid of tree) if (alive(pid)) process.kill(pid, 'SIGKILL');
      }
    });
  });

  describe('when the server gets SIGINT twice at once (one Ctrl-C under npm), then again (impatience)', () => {
    it('then the echo passes unsaid, the later one is noted and ignored, the request in flight finishes, and the exit is 0', async () => {
      const db = await createTestDatabase('kg_stop');
      const echo = await startEcho();
      const dir = tempDir('kg-stop-');
      writeFileSync(join(dir, 'keygate.yaml'), `upstream:\n  url: ${echo.url}\n`);
      const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: db.url, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', KEYGATE_CONFIG: join(dir, 'keygate.yaml') };
      delete env.REDIS_URL;
      const server = spawn(process.execPath, [join(packageRoot, 'bin/keygate.js'), 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      const out = outputOf(server);
      const exited = new Promise<number | null>((ok) => server.once('exit', (code) => ok(code)));
      const presses: NodeJS.Timeout[] = [];
      try {
        const url = await out.waitFor(/listening on (http:\/\/\S+)\n/, 90_000);
        const { client: session } = await signUp(url);
        const keyed = new Client(url).withKey((await session.post('/api/api-keys', { name: 'ctrl-c' })).body.key as string);
        const inFlight = keyed.get('/api/hold/ctrl-c');
        await echo.untilHeld(1, 10_000);
        // The presses' timeline: the terminal's SIGINT, npm's copy of it 50 ms later, then a second press.
        let pressedAgain = false;
        server.kill('SIGINT');
        presses.push(setTimeout(() => server.kill('SIGINT'), 50), setTimeout(() => {
          pressedAgain = true;
          server.kill('SIGINT');
        }, SIGNAL_ECHO_MS + 500));
        await out.waitFor(/SIGINT again; already stopping/, 10_000);
        expect(pressedAgain, 'the "again" line answers the second press, not the copy of the first').to.equal(true);
        echo.releaseHeld();
        expect((await inFlight).status).to.equal(200);
        expect(await exited).to.equal(0);
        expect(out.text().split('\n').filter((l) => l.includes('SIGINT'))).to.deep.equal([
          'keygate: SIGINT: stopping',
          `keygate: SIGINT again; already stopping (at most ${SHUTDOWN_GRACE_MS / 1000} s for requests in flight)`,
        ]);
      } finally {
        presses.forEach(clearTimeout);
        if (server.exitCode === null) server.kill('SIGKILL');
        await echo.close();
        await db.drop();
      }
    });
  });

  describe('when a request outlives the grace period', () => {
    it('then it is cut off, and the close hooks run after it, before the pools close', async () => {
      const echo = await startEcho();
      const gw = await startTestGateway({ config: { upstream: { url: echo.url } } });
      try {
        const { client: session } = await signUp(gw.url);
        const key = (await session.post('/api/api-keys', { name: 'slow' })).body.key as string;
        const order: string[] = [];
        gw.closeHooks.add('test', async () => {
          order.push(`hook ran; server listening: ${gw.server.listening}`);
          await gw.pool.query('SELECT 1');
          order.push('hook could still use the pool');
        });
        gw.closeHooks.add('failing', async () => {
          throw new Error('this flush fails');
        });
        const stuck = new Client(gw.url).withKey(key).get('/api/hold/forever').then((r) => r.status, (e: Error) => e.message);
        await echo.untilHeld(1, 10_000);
        const { cutOff } = await gw.shutdown(300);
        expect(cutOff).to.equal(1);
        expect(await stuck).to.match(/socket hang up|ECONNRESET/);
        expect(order).to.deep.equal(['hook ran; server listening: false', 'hook could still use the pool']);
        expect(gw.logs.join('')).to.include('this flush fails');
      } finally {
        await echo.close();
        await gw.database.drop();
      }
    });
  });
});
