import { connect } from 'node:net';

// Requests written byte for byte: fetch and most clients would tidy the very spellings these tests
// are about (a trailing dot, a Host header that is no host).

export interface RawReply { status: number; headers: Map<string, string[]>; body: string; text: string }

/** Sends `head` (request line and header lines, without the blank line) and reads until the server closes. */
export function rawRequest(url: string, head: string[], body = ''): Promise<RawReply> {
  const { hostname, port } = new URL(url);
  return new Promise((ok, fail) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', fail);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const lines = text.slice(0, split < 0 ? text.length : split).split('\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(lines[0] ?? '')?.[1] ?? 0);
      const headers = new Map<string, string[]>();
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(':');
        const name = line.slice(0, colon).toLowerCase();
        headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()]);
      }
      ok({ status, headers, body: split < 0 ? '' : text.slice(split + 4), text });
    });
    socket.write([...head, 'Connection: close', ...(body ? [`Content-Length: ${Buffer.byteLength(body)}`] : []), '', ''].join('\r\n') + body);
  });
}
