import { keysOn, type Config } from '../../config.ts';
import { AppError } from '../../errors.ts';
import { hasValidChecksum } from '../../services/keys/format.ts';
import type { GrantService, IssuedToken } from '../../services/oauth-grants.ts';
import type { UnknownTokenScreen } from '../../services/keys/unknown-tokens.ts';
import type { OAuthHolder } from '../../oauth/holder.ts';
import { isTokenShaped } from '../../oauth/token-format.ts';
import { OAUTH_ROUTES } from '../../oauth/provider.ts';
import { ownCredentialFinder } from './disguises.ts';
import type { Resolver } from './resolve.ts';
import type { Caller } from '../state.ts';

// An OAuth access token is a credential on the MCP endpoint only. Anywhere else this
// resolver answers "not mine" and the token is nothing: the request is decided by whatever else it
// carries. It acts as the grant's owner with the `mcp` permission alone; the policy decides it as
// subject `key`, so every policy line about keys applies to it too.

/** One object for every grant: the policy works out a permissions object's atoms once. */
const MCP_ONLY: Readonly<Record<string, string[]>> = Object.freeze({ mcp: ['access'] });

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The Bearer value of a request, when it is one keygate would recognise as its own key. */
export const looksLikeKey = (value: string, prefix: string): boolean => value.startsWith(prefix) && hasValidChecksum(value);

// One answer for every reason, as for keys: telling them apart would confirm a token existed.
const invalidToken = () =>
  new AppError('INVALID_API_KEY', 'The access token is not valid: unknown, expired or revoked, or its owner cannot sign in.');

export function oauthTokenResolver(
  oauth: OAuthHolder,
  grants: GrantService,
  unknownTokens: UnknownTokenScreen,
  config: Pick<Config, 'surface' | 'apiKeys'>,
): Resolver {
  const mcpPath = config.surface.paths.mcp;
  const keyPrefix = keysOn(config)?.prefix ?? null;
  // Not mine is answered at once (every request that is not a token on the MCP endpoint).
  return (ctx) => {
    if (!oauth.issuer || ctx.path !== mcpPath || ctx.req.headers['x-api-key'] !== undefined) return null;
    const m = BEARER.exec(ctx.get('authorization'));
    if (!m) return null;
    const value = m[1]!;
    if (keyPrefix !== null && looksLikeKey(value, keyPrefix)) return null;
    // A value without our mark was never issued here: refused without building the library or
    // asking the store.
    if (!isTokenShaped(value)) throw invalidToken();
    return resolveToken(value);
  };
  async function resolveToken(value: string) {
    const live = await oauth.runtime();
    if (!live) return null;
    // A made-up token with a checksum that holds costs no lookup, as a made-up key costs none.
    if (!(await unknownTokens.mayBeStored(value))) throw invalidToken();
    const found = await live.provider.AccessToken.find(value);
    unknownTokens.looked(value, found !== undefined);
    const token: IssuedToken | null = found?.grantId && found.accountId
      ? {
        grantId: found.grantId, accountId: found.accountId,
        scopes: (found.scope ?? '').split(' '), audience: ([] as string[]).concat(found.aud ?? []),
      }
      : null;
    const result = await grants.verify(token, live.resource);
    if (result.status !== 'valid') throw invalidToken();
    const { grant, owner } = result;
    return {
      kind: 'grant',
      user: owner,
      grant: {
        id: grant.id, clientId: grant.clientId, clientName: grant.clientName,
        permissions: MCP_ONLY, requestQuota: grant.requestQuota, rateLimits: grant.rateLimits,
      },
    } satisfies Caller;
  }
}

const REGISTRATION_READ = `${OAUTH_ROUTES.registration}/`;

/**
 * Before anything is forwarded: an Authorization that carries a keygate key or a token keygate
 * issued, in any spelling (after `Bearer` or `DPoP` in any case, bare, beside other credentials,
 * inside Basic, or wrapped: disguises.ts), never reaches the upstream, on any route and whether or
 * not OAuth is on; any other Authorization passes untouched. Both are recognised by their shape and
 * checksum, so this costs no lookup.
 */
export function dropOwnBearer(config: Pick<Config, 'apiKeys' | 'surface'>) {
  const holdsOwn = ownCredentialFinder(keysOn(config)?.prefix ?? null);
  const mcpPath = config.surface.paths.mcp;
  return function dropOwnBearerScreen(ctx: Parameters<Resolver>[0]): void {
    // On the MCP endpoint the Bearer is the credential the caller chain reads, and the MCP tools
    // build their own upstream headers; a registration's read (RFC 7592) is answered by the OAuth
    // library, which reads its registration access token there, and /oauth/ is never forwarded.
    // Everywhere else it must not leave the gateway.
    const value = ctx.path === mcpPath || ctx.path.startsWith(REGISTRATION_READ) ? '' : ctx.get('authorization');
    if (value && holdsOwn(value)) {
      delete ctx.req.headers.authorization;
    }
  };
}
