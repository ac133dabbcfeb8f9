import type Provider from 'oidc-provider';
import type { Configuration, KoaContextWithOIDC } from 'oidc-provider';
import type { Pool } from '../store/db.ts';
import { ensureSecrets } from '../store/oauth.ts';
import { candidateSharedSecrets } from '../services/shared-secrets.ts';
import type { GrantService } from '../services/oauth-grants.ts';
import { createAdapterClass } from './adapter.ts';
import { mintToken } from './token-format.ts';
import { createDocumentFetch } from './document-fetch.ts';
import { applicationTypeOf, loopbackPortMayVary, redirectUriProblem } from './registration.ts';

// The OAuth 2.1 authorization server for MCP clients, on oidc-provider: registration, authorization code
// with PKCE S256, resource indicators, refresh rotation and revocation are the library's; keygate
// brings the storage (adapter.ts over store/oauth.ts), the pages and the routes that serve them
// (web/consent.ts, http/routes/oauth.ts) and what a grant is (services/oauth-grants.ts). This
// folder is the provider's configuration only: it imports nothing from http/ or web/.

export const OAUTH_ROUTES = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  registration: '/oauth/register',
  revocation: '/oauth/revoke',
  jwks: '/oauth/jwks',
  userinfo: '/oauth/userinfo',
  end_session: '/oauth/session/end',
  introspection: '/oauth/introspect',
} as const;

/** What the library answers a `prompt=none` request that would need the person: a redirect to the client. */
const INTERACTION_NEEDED = new Set(['login_required', 'consent_required', 'interaction_required']);

export const consentPath = (uid: string) => `/oauth/consent/${uid}`;

const HOUR = 3600;
const DAY = 24 * HOUR;
/** An access token's life in seconds; the screen of made-up tokens reads new ones by it. */
export const ACCESS_TOKEN_SECONDS = HOUR;

export interface OAuthRuntime {
  provider: Provider;
  issuer: string;
  /** The one protected resource: `<issuer>/api/mcp`. */
  resource: string;
  /** The library as a Node request handler, made once. */
  handler: ReturnType<Provider['callback']>;
}

export interface ProviderDeps {
  pool: Pool;
  grants: GrantService;
  issuer: string;
  mcpPath: string;
  /** The page a person's browser gets when a step under /oauth/ fails (http/routes/oauth.ts). */
  renderError: NonNullable<Configuration['renderError']>;
  /** `oauth.clientMetadata`: whether metadata documents may come from loopback and private addresses (tests). */
  clientMetadata?: { allowPrivateAddresses: boolean };
  /** A certificate authority trusted for metadata documents beside the system's (tests only). */
  clientMetadataCa?: string;
}

export async function createOAuthRuntime(deps: ProviderDeps): Promise<OAuthRuntime> {
  const { pool, grants, issuer, mcpPath, renderError, clientMetadata, clientMetadataCa } = deps;
  // Loaded only when a server starts OAuth: the CLI's commands never need it, and the library
  // writes a notice to stderr when loaded on Node 20, which would break their one-line errors.
  const { default: ProviderClass, errors } = await import('oidc-provider');
  const resource = `${issuer}${mcpPath}`;
  // Shared by every instance: an authorization begun on one may be resumed on another.
  const secrets = await ensureSecrets(pool, await candidateSharedSecrets());

  const configuration: Configuration = {
    adapter: createAdapterClass(pool, {
      onGrantDestroyed: (id) => grants.grantDestroyed(id),
      alreadyUsed: (what) => new errors.InvalidGrant(what),
    }),
    clients: [],
    routes: OAUTH_ROUTES,
    scopes: ['mcp'],
    responseTypes: ['code'],
    // Public clients only: an MCP client on someone's machine cannot keep a secret, and no secret
    // then needs storing. PKCE stands in for it.
    clientAuthMethods: ['none'],
    clientDefaults: { grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' },
    pkce: { required: () => true },
    cookies: { keys: [secrets.cookie_key] },
    jwks: { keys: [secrets.jwk as unknown as NonNullable<Configuration['jwks']>['keys'][number]] },
    ttl: {
      AccessToken: ACCESS_TOKEN_SECONDS, AuthorizationCode: 60, RefreshToken: 30 * DAY, Grant: 30 * DAY,
      Interaction: 10 * 60, Session: HOUR,
    },
    rotateRefreshToken: true,
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    findAccount: async (_ctx, sub) => ((await grants.accountUsable(sub)) ? { accountId: sub, claims: async () => ({ sub }) } : undefined),
    // Only the grant just consented to: a returning client always meets the consent page again,
    // so the provider's own session cookie can never stand in for the person's decision.
    loadExistingGrant: async (ctx: KoaContextWithOIDC) => {
      const grantId = ctx.oidc.result?.consent?.grantId;
      return grantId ? ctx.oidc.provider.Grant.find(grantId) : undefined;
    },
    interactions: { url: async (_ctx, interaction) => consentPath(interaction.uid) },
    // Browser-based MCP clients call the token endpoint across origins; PKCE binds the code, so
    // there is nothing a foreign origin could do with it that it could not do without CORS.
    clientBasedCORS: () => true,
    extraClientMetadata: {
      properties: ['keygate_redirect_rules'],
      validator(_ctx, _key, _value, metadata) {
        const given = metadata.redirect_uris ?? [];
        // Not a list of strings: the library refuses it in its own words once this hook returns.
        if (!Array.isArray(given) || !given.every((uri) => typeof uri === 'string')) return;
        const uris: string[] = given;
        for (const uri of uris) {
          const problem = redirectUriProblem(uri);
          // The library's InvalidRedirectUri drops the description it is given; this one keeps it.
          if (problem) throw new errors.InvalidClientMetadata(`redirect_uris: ${problem}`);
        }
        // The library has filled in `web` when the client said nothing; a client whose every
        // redirect URI is loopback runs on the person's machine, and is native whatever it said.
        const applicationType = applicationTypeOf(metadata.application_type as string | undefined, uris);
        if (typeof applicationType !== 'string') throw new errors.InvalidClientMetadata(applicationType.problem);
        metadata.application_type = applicationType;
      },
    },
    // keygate's own page: the library's loads a web font from a third party.
    renderError,
    // A client's metadata document is small; anything past 5 KB is refused unread.
    fetchResponseBodyLimits: { 'client_id metadata document': 5 * 1024 },
    // The library's own guard looks at the address only after connecting (and a TLS handshake):
    // keygate's fetch checks every resolved address first (document-fetch.ts). Loopback and
    // private addresses only with the operator's explicit leave (tests).
    fetch: createDocumentFetch({ allowPrivateAddresses: clientMetadata?.allowPrivateAddresses ?? false, ca: clientMetadataCa }),
    features: {
      devInteractions: { enabled: false },
      // Logging out through a client's redirect would send the browser on to any URI a client
      // registered (an open redirect on this origin), and there is no provider session worth ending:
      // every authorization asks for the keygate session and a fresh consent.
      rpInitiatedLogout: { enabled: false },
      registration: { enabled: true },
      // Client ID Metadata Documents: an https client_id is fetched as the client's metadata (its
      // client_id must equal the URL; no redirects, 3 s, 5 KB, https only) and cached as its HTTP
      // caching headers say, at most a day; nothing is stored.
      clientIdMetadataDocument: { enabled: true, ack: 'draft-02', cacheDuration: { min: 0, max: DAY } },
      revocation: { enabled: true },
      introspection: { enabled: false },
      userinfo: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => resource,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, indicator) => {
          if (indicator !== resource) throw new errors.InvalidTarget(`the only resource here is ${resource}`);
          return { scope: 'mcp', audience: resource, accessTokenTTL: ACCESS_TOKEN_SECONDS, accessTokenFormat: 'opaque' };
        },
      },
    },
  };
  const provider = new ProviderClass(issuer, configuration);
  // An authorization request that fails its checks is answered with the error page above, never
  // with a redirect to a URI the request named, registered or not: until the request
  // is valid nothing shows that whoever sent the person there owns that URI. The library decides
  // after announcing the error, so the flag is cleared here. The resumed step (`/authorize/<uid>`,
  // a person's Deny) still answers the client by redirect, as it must. So does `prompt=none` when
  // a sign-in or consent would be needed (OpenID Connect Core 3.1.2.6): that request passed every
  // check, its redirect URI among them, and the library has already made its answer a 303.
  const noRedirect = (ctx: KoaContextWithOIDC, err: unknown) => {
    if (ctx.path !== OAUTH_ROUTES.authorization || !err || typeof err !== 'object' || !('allow_redirect' in err)) return;
    const answer = (err as { error?: unknown }).error;
    if (ctx.oidc?.redirectUriCheckPerformed && typeof answer === 'string' && INTERACTION_NEEDED.has(answer)) return;
    (err as { allow_redirect: boolean }).allow_redirect = false;
  };
  provider.on('authorization.error', noRedirect);
  provider.on('server_error', noRedirect);
  // The library lets a native client's loopback redirect URI take any port on `localhost` too;
  // RFC 8252 7.3 names only the IP literals, where no other program can answer for the name.
  const redirectUriAllowed = provider.Client.prototype.redirectUriAllowed;
  provider.Client.prototype.redirectUriAllowed = function (this: InstanceType<Provider['Client']>, uri: string) {
    return this.redirectUris?.includes(uri) || (loopbackPortMayVary(uri) && redirectUriAllowed.call(this, uri));
  };
  // Every token a client could present carries keygate's mark (token-format.ts); codes and the
  // library's internal ids keep its own, since they never travel in an Authorization header.
  for (const Model of [provider.AccessToken, provider.RefreshToken, provider.RegistrationAccessToken]) {
    // The library's types leave this per-model hook out. An access token's format is settled when
    // its id is made; ours is opaque (the resource server's accessTokenFormat says so too).
    (Model.prototype as { generateTokenId?: (this: { format?: string }) => string }).generateTokenId = function () {
      this.format = 'opaque';
      return mintToken();
    };
  }
  return { provider, issuer, resource, handler: provider.callback() };
}

/** The authorization server's issuer URL, or why there is none. */
export function oauthIssuer(publicUrl: string | null, host: string, listenUrl: string): { issuer: string } | { reason: string } {
  if (publicUrl) return { issuer: publicUrl.replace(/\/$/, '') };
  if (host === '0.0.0.0' || host === '::' || host === '' || host === '[::]') {
    return {
      reason: `OAuth for MCP clients is off: the gateway listens on the wildcard address ${host} and publicUrl is not set,`
        + ' so there is no issuer URL a client could trust. Set publicUrl.',
    };
  }
  return { issuer: listenUrl };
}
