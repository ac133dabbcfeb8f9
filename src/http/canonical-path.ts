import type { Next } from 'koa';
import { AppError } from '../services/errors.ts';
import type { GatewayContext } from './state.ts';

// CONTRACT section 5.6: a path is decided in one canonical spelling, so that no other spelling of
// it (dot segments, doubled slashes, encoded letters, a trailing slash) reaches what the canonical
// one is refused. What cannot be made canonical safely is refused outright.

const UNRESERVED = /[A-Za-z0-9\-._~]/;

const unsafe = (why: string) =>
  new AppError('VALIDATION_FAILED', `The request path cannot be used: ${why}.`, { errors: [{ path: '(path)', message: why }] });

function trailingDotOrSpace(seg: string): boolean {
  let plain = seg;
  try {
    plain = decodeURIComponent(seg);
  } catch {
    // Not UTF-8 after decoding: judge the spelling as it stands, whose "%XX" tail is no space.
  }
  return /[.\s\u200b\u2060\ufeff]$/u.test(plain);
}

/** Returns the canonical path, or throws VALIDATION_FAILED. */
export function canonicalizePath(raw: string): string {
  if (!raw.startsWith('/')) throw unsafe('it must start with "/"');
  if (raw.includes('\\')) throw unsafe('it contains a backslash');
  // Servlet-style upstreams drop `;parameters` from a segment (and read `..;` as `..`), so a path
  // with one would be decided as one thing and served as another.
  if (raw.includes(';') || /%3b/i.test(raw)) throw unsafe('it contains a ";" path parameter');
  // Decode only unreserved characters; an encoded "/", "\", NUL or "%" would change what the
  // segments are after a second decoding further down the line, so they are refused.
  let decoded = '';
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c !== '%') {
      decoded += c;
      continue;
    }
    const hex = raw.slice(i + 1, i + 3);
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) throw unsafe('it has a malformed percent-encoding');
    const ch = String.fromCharCode(parseInt(hex, 16));
    if (UNRESERVED.test(ch)) decoded += ch;
    else if (ch === '/' || ch === '\\' || ch === '%' || ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f) throw unsafe('it encodes a separator or control character');
    else decoded += `%${hex.toUpperCase()}`;
    i += 2;
  }
  const out: string[] = [];
  for (const seg of decoded.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (!out.length) throw unsafe('it climbs above the root');
      out.pop();
      continue;
    }
    // IIS and Windows file systems drop a trailing dot or space from a name, and some frameworks
    // trim whitespace: `billing.` or `billing%20` would be served as `billing` yet decided as
    // something else. Any trailing whitespace counts, encoded ASCII or Unicode alike.
    if (trailingDotOrSpace(seg)) throw unsafe('a segment ends in "." or whitespace');
    out.push(seg);
  }
  return '/' + out.join('/');
}

/**
 * Rewrites ctx.path to its canonical spelling before anything decides on it; the router and the
 * upstream then see exactly the path the policy saw.
 */
export async function canonicalPath(ctx: GatewayContext, next: Next) {
  // From the raw request target, not ctx.path: Koa's URL parser quietly drops a fragment and turns
  // "\\" into "/" when one is present, and would accept an absolute-form target naming another host.
  const raw = ctx.req.url ?? '';
  if (!raw.startsWith('/')) throw unsafe('the request target must be a path starting with "/"');
  if (raw.includes('#')) throw unsafe('it contains a "#" fragment');
  const q = raw.indexOf('?');
  const canonical = canonicalizePath(q < 0 ? raw : raw.slice(0, q));
  if (canonical !== ctx.path) ctx.path = canonical;
  ctx.state.canonicalPath = canonical;
  await next();
}
