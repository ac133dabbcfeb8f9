import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { tempDir } from './tmp.ts';

/** A free TCP port on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/** A Redis of the test's own, which the test may stop and start again on the same port. */
export class OwnRedis {
  private child: ChildProcess | null = null;
  private readonly dir = tempDir('kg-redis-');
  constructor(readonly port: number) {}
  get url() { return `redis://127.0.0.1:${this.port}`; }

  /** Resolves when redis-server says it accepts connections; a timeout bounds the wait. */
  async start(timeoutMs = 10_000): Promise<void> {
    const child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir], { stdio: ['ignore', 'pipe', 'ignore'] });
    this.child = child;
    await new Promise<void>((ok, fail) => {
      let seen = '';
      const bound = setTimeout(() => done(new Error(`redis-server did not start on ${this.port}: ${seen.slice(-500)}`)), timeoutMs);
      const done = (err?: Error) => {
        clearTimeout(bound);
        child.stdout!.off('data', onData).resume();
        child.off('exit', onExit);
        if (err) fail(err);
        else ok();
      };
      const onData = (chunk: Buffer) => {
        seen += chunk;
        if (seen.includes('Ready to accept connections')) done();
      };
      const onExit = (code: number | null) => done(new Error(`redis-server exited with ${code}: ${seen.slice(-500)}`));
      child.stdout!.on('data', onData);
      child.once('exit', onExit);
    });
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
    this.child = null;
  }
}
