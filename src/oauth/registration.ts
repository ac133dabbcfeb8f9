// What a client may register, as pure rules: what an anonymous caller may store with
// one registration, and which redirect URIs are accepted. The route (http/routes/oauth.ts) reads
// the body within the bound and turns a refusal into a problem that also carries RFC 7591's `error`;
// the provider (provider.ts) applies the redirect rule to every registration.

export const MAX_REGISTRATION_BYTES = 8 * 1024;
export const MAX_CLIENT_NAME = 200;

/** Why the registration's text is refused, or null: what the library does not bound itself. */
export function metadataProblem(text: string): string | null {
  let metadata: unknown;
  try {
    metadata = JSON.parse(text);
  } catch {
    return 'The client metadata is not valid JSON.';
  }
  const name = metadata !== null && typeof metadata === 'object' ? (metadata as { client_name?: unknown }).client_name : undefined;
  if (typeof name === 'string' && [...name].length > MAX_CLIENT_NAME) return `client_name is longer than ${MAX_CLIENT_NAME} characters.`;
  if (holdsUnstorableText(metadata)) return 'The client metadata holds a NUL character (\\u0000) or half of a surrogate pair.';
  return null;
}

// PostgreSQL's jsonb keeps neither U+0000 nor half of a surrogate pair: such a registration
// failed only when stored, as a 500. It is the client's mistake, said as one.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
function holdsUnstorableText(value: unknown): boolean {
  const pending = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (typeof next === 'string') {
      if (UNSTORABLE.test(next)) return true;
    } else if (next !== null && typeof next === 'object') {
      for (const [key, inner] of Object.entries(next)) pending.push(key, inner);
    }
  }
  return false;
}

/** Hosts an `http:` redirect URI may name (RFC 8252 loopback); everything else must be `https:`. */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** Why a redirect URI is refused, or null. Exact matching is the library's (web clients). */
export function redirectUriProblem(uri: string): string | null {
  // The parser drops tabs and line breaks and trims spaces, so the URI it read is not the one
  // stored and matched, nor one a Location header may carry.
  if (/[\u0000-\u0020\u007f]/.test(uri)) return `${JSON.stringify(uri)} holds a space or a control character`;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `${uri} is not an absolute URL`;
  }
  const neither = `${uri} uses neither https: nor http: on a loopback address (127.0.0.1, localhost, [::1])`;
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return neither;
  if (!plainHost(url.hostname) || !writtenPlainly(uri, url)) {
    return `${uri}: the host must be written as a plain DNS name or IP address`
      + ' (ASCII letters, digits, hyphens and dots; no user info or percent-encoding)';
  }
  if (url.protocol === 'https:') return null;
  if (LOOPBACK_HOSTS.has(url.hostname)) return null;
  return neither;
}

const isLoopback = (uri: string): boolean => {
  const url = URL.parse(uri);
  return url?.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
};

/**
 * The client's application type (OpenID Connect Registration): `native` with loopback redirect URIs,
 * `web` with https ones; `web` (the library's default when none was sent) with only loopback URIs
 * is native. Answers why the pair is refused otherwise.
 */
export function applicationTypeOf(given: string | undefined, redirectUris: string[]): 'native' | 'web' | { problem: string } {
  const loopback = redirectUris.length > 0 && redirectUris.every(isLoopback);
  if (given === 'native') {
    if (loopback) return 'native';
    return { problem: 'a native client registers only loopback redirect URIs (http://127.0.0.1, http://[::1] or http://localhost)' };
  }
  if (given === undefined || given === 'web') return loopback ? 'native' : 'web';
  return { problem: 'application_type is native or web' };
}

/** Whether a native client's redirect URI may name another port than the registered one: loopback IP literals only. */
export const loopbackPortMayVary = (uri: string): boolean => {
  const url = URL.parse(uri);
  return url?.protocol === 'http:' && (url.hostname === '127.0.0.1' || url.hostname === '[::1]');
};

// The URL parser lets `;`, `*`, `'` and more through in a host; such a host would be written into
// the consent page's Content-Security-Policy. Only letters, digits and hyphens in dot-separated
// labels (IDNs arrive as punycode), an IPv4 address, or a bracketed IPv6 literal are a host here.
const DNS_NAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;
const IPV6_LITERAL = /^\[[0-9a-f:.]+\]$/;
const plainHost = (hostname: string): boolean => DNS_NAME.test(hostname) || IPV6_LITERAL.test(hostname);

// The parser forgives what a person reading the consent page would not see through: a Cyrillic
// `а` becomes punycode that looks nothing like what was written, `evil%2eexample` becomes
// `evil.example`, and `trusted-bank.example@evil.example` is a host behind user info. The
// authority as written must already be the host the parser found.
const WRITTEN_AUTHORITY = /^([a-z0-9.-]+|\[[0-9a-f:.]+\])(?::\d{1,5})?$/i;
function writtenPlainly(uri: string, url: URL): boolean {
  if (!uri.slice(url.protocol.length).startsWith('//')) return false;
  const afterScheme = uri.slice(url.protocol.length + 2);
  const authority = afterScheme.slice(0, afterScheme.search(/[/?#]|$/));
  const written = WRITTEN_AUTHORITY.exec(authority);
  return written !== null && written[1]!.toLowerCase() === url.hostname;
}

/** The origin of a redirect URI as it may stand in a CSP source list, or null when it may not. */
export function cspOrigin(uri: string): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return null;
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || !plainHost(url.hostname)) return null;
  return /^https?:\/\/[a-z0-9.:[\]-]+$/.test(url.origin) ? url.origin : null;
}
