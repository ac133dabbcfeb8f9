import { AppError } from '../errors.ts';
import type { GatewayContext } from './state.ts';

// A path is decided in one canonical spelling, so that no other spelling of
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

// An upstream that compares paths without regard to case may do it the Unicode way:
// Java's equalsIgnoreCase reads "ſ" (U+017F) as "s", the Kelvin sign (U+212A) as "k", "ı" as "i";
// a framework that applies NFKC reads fullwidth "Ａ" as "A" and "／" as "/". Folding such a path
// ourselves and deciding on the fold would still forward the original spelling, whose meaning then
// rests on the upstream folding exactly as we did. So, as with the other spellings above, a
// character that any of these readings turns into ASCII is refused: the policy only ever decides
// a path whose letters are ASCII, or whose other letters mean nothing in ASCII (é, ü, 中 pass).
// Any letter case of ASCII itself is the policy's business (it decides paths case-insensitively).

/** The readings of one character an upstream might compare by: itself, NFKC, upper and lower case. */
function foldsOntoAscii(ch: string): boolean {
  for (const v of [ch, ch.toLowerCase(), ch.toUpperCase()]) {
    if (/[\x00-\x7f]/.test(v) || /[\x00-\x7f]/.test(v.normalize('NFKC'))) return true;
  }
  return false;
}

function refuseAsciiLookalikes(decoded: string): void {
  // Only percent-encoded bytes can carry a non-ASCII letter: Node refuses raw bytes above 0x7F.
  if (!/%[89A-F]/.test(decoded)) return;
  let text: string;
  try {
    text = decodeURIComponent(decoded);
  } catch {
    // Not UTF-8: a strict decoder reads U+FFFD, a lenient one may read an overlong form as ASCII
    // ("%C1%B3" as "s"); what cannot be read one way only is refused, like the other unsafe spellings.
    throw unsafe('it percent-encodes bytes that are not UTF-8');
  }
  for (const ch of text) {
    if (ch.charCodeAt(0) > 0x7f && foldsOntoAscii(ch)) {
      const codePoint = ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
      throw unsafe(`U+${codePoint} reads as ASCII under Unicode case folding or normalization`);
    }
  }
}

// The spelling nearly every request uses: segments of unreserved characters, none empty, none
// starting or ending with a dot. Such a path is canonical as it stands (the steps below would give
// it back unchanged), so it is answered without them.
const PLAIN_PATH = /^(?:\/[A-Za-z0-9_~-](?:[A-Za-z0-9._~-]*[A-Za-z0-9_~-])?)+$/;

/** Returns the canonical path, or throws VALIDATION_FAILED. */
export function canonicalizePath(raw: string): string {
  return PLAIN_PATH.test(raw) ? raw : canonicalizeStepByStep(raw);
}

/** Every step, whatever the spelling: what the shortcut above must agree with (test/fuzz). */
export function canonicalizeStepByStep(raw: string): string {
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
    else if (ch === '/' || ch === '\\' || ch === '%' || ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f) {
      throw unsafe('it encodes a separator or control character');
    }
    else decoded += `%${hex.toUpperCase()}`;
    i += 2;
  }
  refuseAsciiLookalikes(decoded);
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
export function canonicalPath(ctx: GatewayContext): void {
  // From the raw request target, not ctx.path: Koa's URL parser quietly drops a fragment and turns
  // "\\" into "/" when one is present, and would accept an absolute-form target naming another host.
  const raw = ctx.req.url ?? '';
  if (!raw.startsWith('/')) throw unsafe('the request target must be a path starting with "/"');
  if (raw.includes('#')) throw unsafe('it contains a "#" fragment');
  const q = raw.indexOf('?');
  const canonical = canonicalizePath(q < 0 ? raw : raw.slice(0, q));
  if (canonical !== ctx.path) ctx.path = canonical;
  ctx.state.canonicalPath = canonical;
}
