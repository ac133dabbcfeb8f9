import { expect } from 'chai';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { createRedisClient } from '../../../src/store/quota/redis-client.ts';
import { createRedisCounters, REDIS_FAIL_FAST_MS } from '../../../src/store/quota/redis-counters.ts';
import { StoreUnavailableError } from '../../../src/errors.ts';

// A Redis that accepts connections and never answers, as a frozen one does: each command it is sent
// is counted, so the test sees which calls reached it and which failed without being sent.

describe('the Redis counter store after a command that timed out', function () {
  this.timeout(10_000);
  let server: net.Server;
  let received = '';
  let frozen = false;
  const sockets = new Set<net.Socket>();
  let nowMs = 0;
  before(async () => {
    server = net.createServer((socket) => {
      sockets.add(socket);
      socket.on('data', (chunk) => {
        const text = chunk.toString('latin1');
        if (frozen) {
          received += text;
          return;
        }
        // Until the client is ready, its handshake (CLIENT SETINFO, INFO) is answered.
        for (const [, name] of text.matchAll(/\*\d+\r\n\$\d+\r\n(\w+)/g)) socket.write(name!.toLowerCase() === 'info' ? '$0\r\n\r\n' : '+OK\r\n');
      });
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  it('fails the next commands on that counter at once for a second without sending them, then asks Redis again', async () => {
    const { port } = server.address() as AddressInfo;
    const client = createRedisClient({ kind: 'single', url: `redis://127.0.0.1:${port}` });
    const store = createRedisCounters(client, { prefix: 'ff:', nowMs: () => nowMs });
    try {
      await new Promise((resolve) => client.once('ready', resolve));
      frozen = true;
      const day = new Date(Date.UTC(2026, 10, 23));
      nowMs = 1_000_000;
      const first = await store.increment('quota:a', day, 60).then(() => null, (e: unknown) => e);
      expect(first).to.be.instanceOf(StoreUnavailableError);
      const sentBefore = (received.match(/EVAL/gi) ?? []).length;
      expect(sentBefore, 'the first increment reached the server').to.be.at.least(1);

      // Within the window: that counter is refused without a round trip, in both directions.
      nowMs += REDIS_FAIL_FAST_MS - 1;
      const startedAt = Date.now();
      const second = await store.increment('quota:a', day, 60).then(() => null, (e: unknown) => e);
      expect(second).to.be.instanceOf(StoreUnavailableError);
      const giveBack = await store.decrement('quota:a', day).then(() => null, (e: unknown) => e);
      expect(giveBack).to.be.instanceOf(StoreUnavailableError);
      expect(Date.now() - startedAt, 'refused without waiting for a timeout').to.be.below(400);
      expect((received.match(/EVAL/gi) ?? []).length, 'no increment was sent in the window').to.equal(sentBefore);
      expect(received, 'no decrement was sent in the window').to.not.match(/\bdecr\b/i);

      // Another counter (on a Cluster, perhaps another shard) is still asked.
      await store.increment('quota:b', day, 60).catch(() => {});
      expect((received.match(/EVAL/gi) ?? []).length, 'another counter is sent').to.equal(sentBefore + 1);

      // After the window, the counter is asked again.
      nowMs += 2;
      await store.increment('quota:a', day, 60).catch(() => {});
      expect((received.match(/EVAL/gi) ?? []).length, 'the increment after the window was sent').to.equal(sentBefore + 2);
    } finally {
      client.disconnect();
    }
  });
});
