import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { tempDir } from './tmp.ts';
import { Redis } from 'ioredis';

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

  async start(): Promise<void> {
    this.child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir], { stdio: 'ignore' });
    const probe = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => {});
    for (let i = 0; i < 50; i++) {
      try {
        await probe.connect();
        await probe.ping();
        probe.disconnect();
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    probe.disconnect();
    throw new Error(`redis-server did not start on ${this.port}`);
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
