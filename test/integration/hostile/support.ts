import { randomUUID } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { TRACE } from '../../support/echo.ts';
import { startMatrixGateway, type MatrixGateway } from '../matrix/support.ts';
import { rawRequest, type RawReply } from './raw.ts';
import { startTestGateway, type TestGateway, type TestGatewayOptions } from '../../support/gateway.ts';
import { startEcho, type Echo } from '../../support/echo.ts';
import { Client, signUp } from '../../support/http.ts';

// Hostile requests are written byte by byte: an HTTP client library would add, fold, reorder or
// refuse exactly the headers and bodies these attacks are made of.

export interface Hostile {
  echo: Echo;
  gw: TestGateway;
  session: Client;
  /** A plaintext key of the signed-in user; only ever sent to the gateway. */
  key: string;
  /** A second key of the same user. */
  otherKey: string;
  host: string;
  stop(): Promise<void>;
}

export interface HostileOptions {
  /** `upstream.*` settings beside the echo's url. */
  upstream?: Record<string, unknown>;
  /** Other keygate.yaml settings. */
  config?: Record<string, unknown>;
  bodyIdleMs?: number;
  gateway?: TestGatewayOptions;
}

export async function startHostile(opts: HostileOptions = {}): Promise<Hostile> {
  const echo = await startEcho();
  const gw = await startTestGateway({ ...opts.gateway, bodyIdleMs: opts.bodyIdleMs, config: { ...opts.config, upstream: { url: echo.url, ...opts.upstream } } });
  const { client: session } = await signUp(gw.url);
  const key = (await session.post('/api/api-keys', { name: 'hostile' })).body.key as string;
  const otherKey = (await session.post('/api/api-keys', { name: 'bystander' })).body.key as string;
  return {
    echo, gw, session, key, otherKey,
    host: new URL(gw.url).host,
    async stop() {
      await gw.stop();
      await echo.close();
    },
  };
}

/** A raw connection to the gateway, with what it has received so far. */
export class RawSocket {
  received = '';
  ended = false;
  private constructor(readonly socket: Socket) {
    socket.on('data', (d: Buffer) => (this.received += d.toString('latin1')));
    socket.on('close', () => (this.ended = true));
    socket.on('error', () => {});
  }

  static open(gatewayUrl: string): Promise<RawSocket> {
    const url = new URL(gatewayUrl);
    return new Promise((ok, fail) => {
      const socket = connect(Number(url.port), url.hostname, () => ok(new RawSocket(socket)));
      socket.once('error', fail);
    });
  }

  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  destroy(): void {
    this.socket.destroy();
  }

  /**
   * Sends each chunk after a pause of `gapMs`: a slow client. The pauses are the scenario, not a
   * wait for the gateway; the one place in the hostile tests where a client takes its time.
   */
  async trickle(chunks: readonly string[], gapMs: number): Promise<void> {
    for (const chunk of chunks) {
      await new Promise((ok) => setTimeout(ok, gapMs));
      this.write(chunk);
    }
  }

  /** Resolves when `ready` holds for what was received (or the connection ended); rejects after `boundMs`. */
  until(ready: (text: string) => boolean, boundMs: number): Promise<string> {
    return new Promise((ok, fail) => {
      const check = () => {
        if (!ready(this.received) && !this.ended) return;
        done();
        ok(this.received);
      };
      const done = () => {
        clearTimeout(timer);
        this.socket.off('data', check);
        this.socket.off('close', check);
      };
      const timer = setTimeout(() => {
        done();
        fail(new Error(`no answer within ${boundMs} ms; received so far: ${JSON.stringify(this.received.slice(0, 200))}`));
      }, boundMs);
      this.socket.on('data', check);
      this.socket.on('close', check);
      check();
    });
  }

  /** The first final (non-1xx) response, once it has arrived whole. */
  async response(boundMs: number): Promise<RawResponse> {
    await this.until((t) => parseResponse(t) !== null, boundMs);
    const res = parseResponse(this.received);
    if (!res) throw new Error(`the connection ended without a whole answer: ${JSON.stringify(this.received.slice(0, 200))}`);
    return res;
  }
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  text: string;
  /** The body when it is a JSON object (a problem, or the echo's answer); otherwise empty. */
  body: { code?: string; method?: string; body?: unknown; [member: string]: unknown };
}

/** Parses the first non-1xx response in `text`, or null while it is incomplete. */
export function parseResponse(text: string): RawResponse | null {
  let rest = text;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) return null;
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n');
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine ?? '')?.[1]);
    if (status >= 100 && status < 200) {
      rest = rest.slice(end + 4);
      continue;
    }
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const i = line.indexOf(':');
      headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    const body = rest.slice(end + 4);
    if (body.length < length) return null;
    const bodyText = body.slice(0, length);
    let parsed: RawResponse['body'] = {};
    try {
      const value: unknown = JSON.parse(bodyText);
      if (value && typeof value === 'object' && !Array.isArray(value)) parsed = value as RawResponse['body'];
    } catch {
      // not JSON
    }
    return { status, headers, text: bodyText, body: parsed };
  }
}

/** A request head, CRLF-terminated, with the fields in exactly the given order. */
export function head(method: string, target: string, fields: [string, string][]): string {
  return `${method} ${target} HTTP/1.1\r\n${fields.map(([n, v]) => `${n}: ${v}\r\n`).join('')}\r\n`;
}

/** What the upstream received as `Authorization` when a keyed request carried the value given. */
export async function forwardedAuthorization(h: Hostile, authorization: string): Promise<{ status: number; sent: string | undefined }> {
  const id = randomUUID();
  const s = await RawSocket.open(h.gw.url);
  s.write(head('GET', '/api/projects/leak', [['Host', h.host], ['x-api-key', h.otherKey], ['Authorization', authorization], [TRACE, id], ['Connection', 'close']]));
  const res = await s.response(10_000);
  s.destroy();
  return { status: res.status, sent: h.echo.received(id)[0]?.headers.authorization };
}

export interface KeyedSent { res: RawReply; code: string | undefined; forwarded: number }

/**
 * A Variant A matrix gateway for the file, and raw requests sent with the `key` or `ai` party's key
 * byte for byte: the answer, its problem code, and how many copies reached the upstream.
 */
export function rawKeyedRequests(): (who: 'key' | 'ai', method: string, path: string) => Promise<KeyedSent> {
  let m: MatrixGateway | undefined;
  before(async () => {
    m = await startMatrixGateway('A');
  });
  after(async () => m?.stop());
  return async (who, method, path) => {
    if (!m) throw new Error('the matrix gateway did not start');
    const id = randomUUID();
    const body = method === 'GET' ? '' : '{}';
    const res = await rawRequest(m.gw.url, [
      `${method} ${path} HTTP/1.1`, `Host: ${new URL(m.gw.url).host}`, `x-api-key: ${m.parties[who].client().headers['x-api-key']}`, `${TRACE}: ${id}`,
      ...(body ? ['Content-Type: application/json'] : []),
    ], body);
    const code = res.body.startsWith('{') ? (JSON.parse(res.body) as { code?: string }).code : undefined;
    return { res, code, forwarded: m.echo.received(id).length };
  };
}
