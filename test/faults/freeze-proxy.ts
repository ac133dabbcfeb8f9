import { createConnection, createServer, type Socket } from 'node:net';
import { freePort } from '../support/redis-server.ts';

// A TCP proxy in front of a server that can freeze the way a stalled network or a paused VM does:
// every connection, open or new, stops passing bytes without closing; on thaw what was held back is
// delivered and traffic flows again, so the peers never see a close.

export interface FreezableProxy {
  port: number;
  /** Rewrites a URL's port to the proxy's. */
  urlFor(url: string): string;
  freeze(): void;
  thaw(): void;
  stop(): Promise<void>;
}

export async function startFreezableProxy(targetHost: string, targetPort: number): Promise<FreezableProxy> {
  let frozen = false;
  const held: (() => void)[] = [];
  const sockets = new Set<Socket>();
  const pass = (to: Socket) => (b: Buffer) => {
    if (frozen) held.push(() => to.write(b));
    else to.write(b);
  };
  const server = createServer((client) => {
    const upstream = createConnection({ host: targetHost, port: targetPort });
    sockets.add(client).add(upstream);
    client.on('data', pass(upstream));
    upstream.on('data', pass(client));
    const end = () => {
      sockets.delete(client);
      sockets.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    // A close while frozen is held back too, as the network would: the other side learns of it on thaw.
    const closed = () => (frozen ? held.push(end) : end());
    client.on('close', closed).on('error', () => {});
    upstream.on('close', closed).on('error', () => {});
  });
  const port = await freePort();
  await new Promise<void>((ok) => server.listen(port, '127.0.0.1', ok));
  return {
    port,
    urlFor(url) {
      const u = new URL(url);
      u.host = `127.0.0.1:${port}`;
      return u.toString();
    },
    freeze: () => void (frozen = true),
    thaw() {
      frozen = false;
      for (const f of held.splice(0)) f();
    },
    async stop() {
      frozen = false;
      held.length = 0;
      sockets.forEach((s) => s.destroy());
      await new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}
