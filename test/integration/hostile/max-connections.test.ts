import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { RawSocket } from './support.ts';
import { until } from '../../support/until.ts';

// 300 anonymous sockets that send nothing stayed open, each a file descriptor and a slot of the
// kernel's accept queue; enough of them and the process runs out. `server.maxConnections`
// (default 10,000) bounds open connections, and past it a new one is closed at once. Set to 3 here.

const MAX = 3;

describe('hostile: more connections than server.maxConnections', function () {
  this.timeout(30_000);
  let gw: TestGateway;
  let held: RawSocket[] = [];
  before(async () => (gw = await startTestGateway({ config: { server: { maxConnections: MAX } } })));
  afterEach(() => {
    for (const s of held) s.destroy();
    held = [];
  });
  after(async () => gw?.stop());

  const get = (s: RawSocket) => s.write(`GET /healthz HTTP/1.1\r\nHost: ${new URL(gw.url).host}\r\n\r\n`);

  describe(`when ${MAX} connections are open and idle`, () => {
    it('then one more is closed at once, without an answer', async () => {
      for (let i = 0; i < MAX; i++) held.push(await RawSocket.open(gw.url));
      // Each held connection is known to the server once it has answered on it.
      for (const s of held) {
        get(s);
        await s.response(5_000);
      }
      const extra = await RawSocket.open(gw.url);
      held.push(extra);
      get(extra);
      await extra.until(() => extra.ended, 5_000);
      expect(extra.ended).to.equal(true);
      expect(extra.received).to.equal('');
    });
  });

  describe('when one of them closes', () => {
    it('then a new connection is served again', async () => {
      for (let i = 0; i < MAX; i++) held.push(await RawSocket.open(gw.url));
      for (const s of held) {
        get(s);
        await s.response(5_000);
      }
      held.shift()!.destroy();
      // The server learns of the close asynchronously: try until a connection is served (bounded).
      await until('a new connection is served', async () => {
        const s = await RawSocket.open(gw.url);
        held.push(s);
        get(s);
        await s.until((t) => t.includes('\r\n\r\n') || s.ended, 5_000);
        return /^HTTP\/1\.1 200 /.test(s.received);
      }, 10_000, 50);
    });
  });

  describe('the default', () => {
    it('is 10,000', async () => {
      expect(gw.server.maxConnections).to.equal(MAX);
      const { loadConfig } = await import('../../../src/config.ts');
      expect(loadConfig({ env: {}, overrides: {} }).server.maxConnections).to.equal(10_000);
    });
  });
});
