import type { IncomingHttpHeaders } from 'node:http';
import { AppError } from '../../errors.ts';
import { SESSION_COOKIE } from '../cookies.ts';
import type { Caller, GatewayContext } from '../state.ts';
import type { VerifiedKey } from '../../services/keys/types.ts';

// What the upstream may hear of a request. It learns who is calling from the gateway's x-keygate-*
// headers alone: the key and the session cookie never leave the gateway, and whatever a client
// could send to speak with the gateway's voice (identity, client address, scheme, host, method or
// path overrides) is dropped before the gateway's own headers are added.

/** More fields than any honest client sends; enough to push identity headers past a parser's limit. */
export const MAX_HEADER_FIELDS = 100;

/** Refused before the caller is resolved, so a header flood spends no key lookup and no quota. */
export function limitHeaderCount(ctx: GatewayContext): void {
  if (ctx.req.rawHeaders.length / 2 > MAX_HEADER_FIELDS) {
    throw new AppError('HEADERS_TOO_LARGE', `The request has more than ${MAX_HEADER_FIELDS} header fields.`, {}, { closeConnection: true });
  }
}

// Hop-by-hop (RFC 9110 7.6.1) and the headers the gateway sets itself or must never pass on.
const DROPPED = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'trailers',
  'transfer-encoding', 'upgrade', 'host', 'content-length', 'x-api-key', 'x-content-api-key', 'cookie',
  // Node has already answered 100 Continue, and undici refuses the header outright.
  'expect',
  // Client-address and scheme claims an upstream would take as the gateway's word.
  'forwarded', 'x-real-ip', 'true-client-ip', 'x-client-ip', 'x-cluster-client-ip', 'cf-connecting-ip', 'fastly-client-ip',
  // Method overrides: the policy decided the request line's method, so the upstream must not act on another.
  'x-http-method-override', 'x-http-method', 'x-method-override',
  // Path overrides read by IIS and Symfony: the policy decided the request line's path.
  'x-original-url', 'x-rewrite-url',
]);

// "_" is read as "-": CGI-style upstreams (Rack, PHP, WSGI, nginx variables) fold the two, so
// `x_keygate_user_id` would pass for the gateway's own header and `x_api_key` would leak a key.
const fold = (name: string) => {
  const lower = name.toLowerCase();
  return lower.includes('_') ? lower.replaceAll('_', '-') : lower;
};

const isGatewayOwned = (folded: string) => /^x-(forwarded|keygate)(-|$)/.test(folded);

/** Names the request's Connection header declares hop-by-hop (RFC 9110 7.6.1), folded. */
function connectionListed(incoming: IncomingHttpHeaders): Set<string> {
  const listed = new Set<string>();
  // Node names every field in lower case and joins repeated Connection fields into one, and no
  // other name folds onto "connection" (it has no "-" for a "_" to stand for): one field to read.
  const value = incoming.connection;
  if (value === undefined) return listed;
  for (const token of value.split(',')) {
    if (token.trim()) listed.add(fold(token.trim()));
  }
  return listed;
}

function stripSessionCookie(cookie: string | undefined): string | null {
  if (!cookie) return null;
  const kept = cookie.split(';').map((c) => c.trim()).filter((c) => c && !c.startsWith(`${SESSION_COOKIE}=`));
  return kept.length ? kept.join('; ') : null;
}

/** How held permissions are spelled for the upstream: `S`, or `S:A` per action. */
export type PermissionSpelling = (permissions: VerifiedKey['permissions']) => string[];

export function identityHeaders(caller: Caller, spell: PermissionSpelling): Record<string, string> {
  if (caller.kind === 'anonymous') return {};
  const h: Record<string, string> = { 'x-keygate-user-id': caller.user.id, 'x-keygate-subject': caller.kind };
  if (caller.kind === 'key') {
    h['x-keygate-key-id'] = caller.key.id;
    h['x-keygate-permissions'] = spell(caller.key.permissions).join(',');
  } else if (caller.kind === 'grant') {
    // An OAuth access token acts as its grant, not as a key.
    h['x-keygate-subject'] = 'oauth';
    h['x-keygate-grant-id'] = caller.grant.id;
    h['x-keygate-permissions'] = spell(caller.grant.permissions).join(',');
  }
  return h;
}

/** Header fields in the order they are sent; a plain object would move integer-like names first. */
export type HeaderList = [name: string, value: string][];

/**
 * The headers to send upstream: the gateway's own (`first`, then identity) lead the list, so an
 * upstream that keeps only its first N fields still hears who is calling.
 */
export function forwardHeaders(
  incoming: IncomingHttpHeaders,
  caller: Caller,
  spell: PermissionSpelling,
  first: Record<string, string> = {},
): HeaderList {
  const out: HeaderList = [...Object.entries(first), ...Object.entries(identityHeaders(caller, spell))];
  const listed = connectionListed(incoming);
  for (const [name, value] of Object.entries(incoming)) {
    const folded = fold(name);
    if (value === undefined || DROPPED.has(folded) || listed.has(folded) || isGatewayOwned(folded)) continue;
    out.push([name, Array.isArray(value) ? value.join(', ') : value]);
  }
  const cookie = listed.has('cookie') ? null : stripSessionCookie(incoming.cookie);
  if (cookie) out.push(['cookie', cookie]);
  if (incoming['content-length'] && !incoming['transfer-encoding']) out.push(['content-length', incoming['content-length']]);
  return out;
}
