import { AppError } from '../errors.ts';
import type { GatewayContext } from './state.ts';

// With `publicUrl` unset the gateway names itself after the request's Host (the OAuth metadata, the
// MCP 401's WWW-Authenticate, the same-origin check). A Host that is no host[:port] could carry
// quotes, spaces or a path into those answers, so it is refused before anything reads it.

const LABEL = '[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?';
const PORT = '(?::[0-9]{1,5})?';
const HOST = new RegExp(`^(?:${LABEL}(?:\\.${LABEL})*\\.?|\\[[0-9A-Fa-f:.]{2,45}\\])${PORT}$`);

export function isValidHost(host: string): boolean {
  return host.length <= 260 && HOST.test(host);
}

/** How many Host fields the request carries; Node keeps only the first in `headers`. */
function hostFields(raw: string[]): number {
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === 4 && raw[i]!.toLowerCase() === 'host') n++;
  return n;
}

export function requireValidHost(ctx: GatewayContext): void {
  // RFC 9112 3.2: a request with more than one Host field is answered 400. Node would keep the
  // first and drop the rest, while a proxy in front or the upstream may read the last: the origin
  // named in the OAuth metadata and checked for DNS rebinding would not be the one that was served.
  if (hostFields(ctx.req.rawHeaders) > 1) {
    throw new AppError('VALIDATION_FAILED', 'The request carries more than one Host header.', {
      errors: [{ path: '(host)', message: 'more than one Host header' }],
    });
  }
  // An HTTP/1.0 request may omit Host; Node itself refuses an HTTP/1.1 one without it.
  const host = ctx.get('host');
  if (host !== '' && !isValidHost(host)) {
    throw new AppError('VALIDATION_FAILED', 'The Host header is not a valid host[:port].', {
      errors: [{ path: '(host)', message: 'not a valid host[:port]' }],
    });
  }
}

/** A header's quoted-string value (RFC 9110 5.6.4): `"` and `\` escaped, so a value can never end the quotes early. */
export function quoted(value: string): string {
  return `"${value.replace(/["\\]/g, '\\$&')}"`;
}
