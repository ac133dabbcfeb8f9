import type { AccountService } from '../../services/accounts.ts';
import { AppError } from '../../errors.ts';
import type { AuthResult } from '../../services/keys/types.ts';
import type { Caller, GatewayContext } from '../state.ts';
import { SESSION_COOKIE } from '../cookies.ts';

/**
 * Answers a caller, or null for "not mine" so the next resolver may try; at once when it can (not
 * its kind of credential, a key already verified), a promise when it must ask a store.
 */
export type Resolver = (ctx: GatewayContext) => Caller | null | Promise<Caller | null>;

export interface KeyAuthenticator { authenticate(plaintext: string): AuthResult | Promise<AuthResult> }

/** The key presented on this request: `x-api-key`, or a Bearer token on the MCP endpoint. */
export function presentedKey(ctx: GatewayContext, mcpPath: string): string | null {
  // Present but empty still makes a key request (that fails): it must not fall back to the cookie.
  if (ctx.req.headers['x-api-key'] !== undefined) return ctx.get('x-api-key');
  if (ctx.path === mcpPath) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'));
    if (m) return m[1]!;
  }
  return null;
}

/**
 * A request carrying a key is a key request, cookie or not. A key that does not authenticate is a
 * 401 and never falls through to the cookie or to anonymous. The detail is the same for unknown,
 * revoked, disabled and expired keys: telling them apart would confirm a key existed.
 */
export function apiKeyResolver(keys: KeyAuthenticator, mcpPath: string): Resolver {
  const callerOf = (result: AuthResult): Caller => {
    if (result.status !== 'valid') {
      throw new AppError('INVALID_API_KEY', 'The API key is not valid. It may be mistyped, revoked, disabled or expired.');
    }
    return { kind: 'key', user: result.owner, key: result.key };
  };
  return (ctx) => {
    const plaintext = presentedKey(ctx, mcpPath);
    if (plaintext === null) return null;
    const result = keys.authenticate(plaintext);
    return result instanceof Promise ? result.then(callerOf) : callerOf(result);
  };
}

/** An unknown or expired cookie is treated as no cookie: a browser keeps stale cookies around. */
export function sessionResolver(accounts: Pick<AccountService, 'resolveSession'>): Resolver {
  const lookUp = async (token: string): Promise<Caller | null> => {
    const found = await accounts.resolveSession(token);
    return found ? { kind: 'session', user: found.user, session: found.session, token } : null;
  };
  return (ctx) => {
    // No Cookie header at all (every key request): nothing to parse.
    if (ctx.req.headers.cookie === undefined) return null;
    const token = ctx.cookies.get(SESSION_COOKIE);
    return token ? lookUp(token) : null;
  };
}

/**
 * The first resolver's answer becomes `ctx.state.caller`; anonymous when none claims the request.
 * Synchronous while every resolver answers at once; a promise from the first one that must wait.
 */
export function resolveCaller(resolvers: Resolver[]) {
  const from = (i: number, ctx: GatewayContext): Promise<void> | undefined => {
    for (; i < resolvers.length; i++) {
      const found = resolvers[i]!(ctx);
      if (found instanceof Promise) {
        const next = i + 1;
        return found.then((caller) => (caller ? void (ctx.state.caller = caller) : from(next, ctx)));
      }
      if (found) {
        ctx.state.caller = found;
        return undefined;
      }
    }
    return undefined;
  };
  return function resolveCallerStep(ctx: GatewayContext): Promise<void> | undefined {
    return from(0, ctx);
  };
}
