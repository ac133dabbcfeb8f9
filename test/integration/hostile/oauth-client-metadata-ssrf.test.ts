import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUp } from '../../support/http.ts';
import { authorizeWith } from '../oauth/interop-support.ts';

// SSRF through a client_id that is a URL: an anonymous authorization request makes the gateway
// fetch whatever https URL it names. A listener on the gateway's own machine stands for the admin
// port, the database, the cloud metadata service: every spelling of "this machine" must be refused
// before a single connection is made, or the gateway is a port scanner (an open port answers
// differently from a closed one).

/** A TCP listener on every local address that counts connections and never answers. */
async function startSilentListener(): Promise<{ port: number; connections: () => number; accepted: number[]; close(): Promise<void> }> {
  let total = 0;
  const accepted: number[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    total++;
    accepted.push(Date.now());
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((ok) => server.listen({ port: 0, host: '::' }, ok));
  return {
    port: (server.address() as { port: number }).port,
    connections: () => total,
    accepted,
    close: () => new Promise((ok) => {
      for (const s of sockets) s.destroy();
      server.close(() => ok());
    }),
  };
}

/** Names the machine's hosts file maps to loopback, besides localhost itself. */
function hostsFileLoopbackNames(): string[] {
  const names = readFileSync('/etc/hosts', 'utf8').split('\n').flatMap((line) => {
    const [address, ...rest] = line.replace(/#.*/, '').trim().split(/\s+/);
    return address && (/^127\./.test(address) || address === '::1') ? rest : [];
  });
  return [...new Set(names)].filter((n) => n && n.toLowerCase() !== 'localhost' && /^[a-z0-9.-]+$/i.test(n));
}

describe('hostile: client metadata document URLs that lead to this machine (SSRF)', function () {
  this.timeout(120_000);
  let guarded: TestGateway;
  let open: TestGateway;
  let listener: Awaited<ReturnType<typeof startSilentListener>>;
  let person: Awaited<ReturnType<typeof signUp>>;
  let openPerson: Awaited<ReturnType<typeof signUp>>;

  before(async () => {
    listener = await startSilentListener();
    guarded = await startTestGateway();
    open = await startTestGateway({ config: { oauth: { clientMetadata: { allowPrivateAddresses: true } } } });
    person = await signUp(guarded.url);
    openPerson = await signUp(open.url);
  });
  after(async () => {
    await guarded?.stop();
    await open?.stop();
    await listener?.close();
  });

  const refusedAtTheGateway = (got: Awaited<ReturnType<typeof authorizeWith>>, what: string) => {
    expect(got.consent, `${what}: a consent page was shown`).to.equal(null);
    expect(got.redirect, `${what}: the client was answered`).to.equal(null);
    expect(got.status, `${what}: ${got.text.slice(0, 200)}`).to.equal(400);
    expect(got.text, what).to.include('invalid_client');
  };

  it('every spelling of loopback, unspecified and mapped addresses is refused with no connection made', async () => {
    const p = listener.port;
    const hosts = [
      '127.0.0.1', 'localhost', 'LOCALHOST', '[::1]', '127.1', '0x7f.0.0.1', '2130706433', '[::ffff:127.0.0.1]', '0.0.0.0', '[::]', '127.0.0.2',
      '[::ffff:7f00:1]', '017700000001', 'localhost.', ...hostsFileLoopbackNames(),
    ];
    for (const host of hosts) refusedAtTheGateway(await authorizeWith(guarded.url, person.client, `https://${host}:${p}/c.json`), host);
    expect(listener.connections(), 'connections the listener saw').to.equal(0);
  });

  it('one try per document, a failure remembered: asked twice, the listener sees one connection', async () => {
    const id = `https://127.0.0.1:${listener.port}/once.json`;
    const before = listener.connections();
    refusedAtTheGateway(await authorizeWith(open.url, openPerson.client, id), 'first ask');
    expect(listener.connections() - before).to.equal(1);
    refusedAtTheGateway(await authorizeWith(open.url, openPerson.client, id), 'second ask');
    expect(listener.connections() - before, 'a failure fetched again at once').to.equal(1);
  });

  it('twenty documents asked for at once get at most eight connections while the first are under way', async () => {
    const from = listener.accepted.length;
    const all = await Promise.all(Array.from({ length: 20 }, (_v, i) => authorizeWith(open.url, openPerson.client, `https://127.0.0.1:${listener.port}/many-${i}.json`)));
    all.forEach((got, i) => refusedAtTheGateway(got, `document ${i}`));
    const times = listener.accepted.slice(from);
    // No fetch can end before its 3 s deadline here (the listener never answers): what connects
    // within 2.5 s of the first connection was under way at the same time.
    const together = times.filter((t) => t - times[0]! < 2500).length;
    expect(together, 'connections made while the first fetch was under way').to.be.within(1, 8);
  });
});
