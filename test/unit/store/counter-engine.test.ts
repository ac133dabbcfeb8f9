import { expect } from 'chai';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { StoreUnavailableError } from '../../../src/errors.ts';
import { openCounterEngine } from '../../../src/store/quota/open.ts';
import { REDIS_FAIL_FAST_MS } from '../../../src/store/quota/redis-counters.ts';
import { until } from '../../support/until.ts';

// The composition root asks one function for the counter engine and then only asks the engine:
// what it reads (its readiness check, its name in the start log, the connections it may open) and
// the clock it is handed must come from the engine alone, whichever store it is.

const quiet = { error: () => {}, warn: () => {} };
const options = (nowMs: () => number) => ({
  wait: { waitReplicas: 0, waitTimeoutMs: 100 },
  databaseUrl: 'postgres://nobody@127.0.0.1:1/none',
  deadlines: { queryTimeoutMs: 500, serverSide: false },
  nowMs, swallowed: () => {}, logger: quiet,
});

describe('the counter engine the gateway opens', function () {
  this.timeout(10_000);

  it('when no Redis is configured, then it counts in PostgreSQL on a pool of its own, which /readyz already asks about', async () => {
    const engine = openCounterEngine(null, options(Date.now));
    try {
      expect(engine.counters.kind).to.equal('postgres');
      expect(engine.describe).to.equal('postgres');
      expect(engine.probe).to.equal(null);
      expect(engine.postgresConnections).to.equal(5);
    } finally {
      await engine.close();
    }
  });

  it('when Redis is configured, then it is named without its password and asked by /readyz', async () => {
    const engine = openCounterEngine({ kind: 'single', url: 'redis://:secret@127.0.0.1:1' }, options(Date.now));
    try {
      expect(engine.counters.kind).to.equal('redis');
      expect(engine.describe).to.equal('redis(127.0.0.1:1)');
      expect(engine.probe?.name).to.equal('redis');
      expect(engine.postgresConnections).to.equal(0);
    } finally {
      await engine.close();
    }
  });

  describe('on Redis, the clock it is handed', () => {
    let server: net.Server;
    let sent = 0;
    const sockets = new Set<net.Socket>();
    // A Redis that answers the handshake and then nothing: every EVAL it gets is counted.
    before(async () => {
      server = net.createServer((socket) => {
        sockets.add(socket);
        socket.on('data', (chunk) => {
          const text = chunk.toString('latin1');
          sent += (text.match(/EVAL/gi) ?? []).length;
          for (const [, name] of text.matchAll(/\*\d+\r\n\$\d+\r\n(\w+)/g)) {
            if (!/^eval/i.test(name!)) socket.write(name!.toLowerCase() === 'info' ? '$0\r\n\r\n' : '+OK\r\n');
          }
        });
        socket.on('error', () => {});
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    });
    after(async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    });

    it('paces the fail-fast window of a counter that did not answer', async () => {
      let nowMs = 5_000_000;
      const { port } = server.address() as AddressInfo;
      const engine = openCounterEngine({ kind: 'single', url: `redis://127.0.0.1:${port}` }, options(() => nowMs));
      const day = new Date(Date.UTC(2026, 10, 26));
      const increment = (name: string) => engine.counters.increment(name, day, 60).then(() => null, (e: unknown) => e);
      try {
        // Until the client is connected a command fails unsent; each try spends a counter of its own.
        let name = '';
        let tries = 0;
        await until('an increment reaches the silent Redis', async () => {
          name = `quota:clock:${++tries}`;
          expect(await increment(name)).to.be.instanceOf(StoreUnavailableError);
          return sent > 0;
        }, 5_000);
        const afterFirst = sent;
        // The clock handed in has not moved: the counter is refused without a send.
        expect(await increment(name)).to.be.instanceOf(StoreUnavailableError);
        expect(sent, 'refused within the window').to.equal(afterFirst);
        // It moves past the window, however little real time passed: Redis is asked again.
        nowMs += REDIS_FAIL_FAST_MS;
        expect(await increment(name)).to.be.instanceOf(StoreUnavailableError);
        expect(sent, 'asked again once the clock handed in passed the window').to.be.above(afterFirst);
      } finally {
        await engine.close();
      }
    });
  });
});
