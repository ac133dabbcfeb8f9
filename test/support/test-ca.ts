import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { tempDir } from './tmp.ts';

// A certificate authority made for one test run, and an https server on loopback whose
// certificate it signed (for localhost and 127.0.0.1): what a client's metadata document host
// looks like to the gateway, without the network.

export interface TestCa { ca: string; key: string; cert: string }

export function makeTestCa(): TestCa {
  const dir = tempDir('kg-ca-');
  const at = (f: string) => join(dir, f);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', at('ca.key'), '-out', at('ca.crt'), '-days', '2', '-subj', '/CN=keygate test CA', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', at('srv.key'), '-out', at('srv.csr'), '-subj', '/CN=localhost');
  writeFileSync(at('ext.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n');
  ssl('x509', '-req', '-in', at('srv.csr'), '-CA', at('ca.crt'), '-CAkey', at('ca.key'), '-CAcreateserial', '-out', at('srv.crt'), '-days', '2', '-extfile', at('ext.cnf'));
  return { ca: readFileSync(at('ca.crt'), 'utf8'), key: readFileSync(at('srv.key'), 'utf8'), cert: readFileSync(at('srv.crt'), 'utf8') };
}

export interface TestHttps { origin: string; hits: string[]; close(): Promise<void> }

/** An https server on 127.0.0.1 answering with `handle`; `origin` names it as https://localhost:PORT. */
export async function startTestHttps(ca: TestCa, handle: (req: IncomingMessage, res: ServerResponse, origin: string) => void): Promise<TestHttps> {
  const hits: string[] = [];
  let origin = '';
  const server: Server = createServer({ key: ca.key, cert: ca.cert }, (req, res) => {
    hits.push(req.url ?? '');
    handle(req, res, origin);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  origin = `https://localhost:${(server.address() as AddressInfo).port}`;
  return {
    origin, hits,
    close: () => new Promise<void>((ok) => {
      server.closeAllConnections();
      server.close(() => ok());
    }),
  };
}
