import type { Context } from 'koa';
import { AppError } from '../errors.ts';
import type { Caller } from '../http/state.ts';
import { errorHeaders } from '../http/problem.ts';
import { quoted } from '../http/host.ts';

// On /api/mcp every refusal takes the OAuth form, so MCP clients know to look
// for credentials at the protected-resource metadata. A store outage stays a 503.

const REFUSALS = new Set(['UNAUTHENTICATED', 'INVALID_API_KEY', 'FORBIDDEN', 'QUOTA_EXCEEDED', 'USER_BANNED']);

export const isMcpRefusal = (err: unknown): boolean => err instanceof AppError && REFUSALS.has(err.code);

/**
 * Where the gateway is reached: `publicUrl`, else the scheme and Host of this request. Not
 * `ctx.origin`: since Koa 3 that is the request's Origin header, absent on most MCP requests.
 */
export const publicBase = (ctx: Context, publicUrl: string | null) =>
  publicUrl ? publicUrl.replace(/\/$/, '') : `${ctx.protocol}://${ctx.host}`;

export const resourceMetadataUrl = (ctx: Context, publicUrl: string | null) =>
  `${publicBase(ctx, publicUrl)}/.well-known/oauth-protected-resource`;

// Worded for what was presented: an OAuth access token is not an API key, and a client that was
// handed one should not be told to go and make a key.
const description: Record<string, string> = {
  UNAUTHENTICATED: 'An API key with MCP access (x-api-key or Authorization: Bearer) or an OAuth access token is required.',
  FORBIDDEN: 'This API key was not created with MCP access.',
  QUOTA_EXCEEDED: 'This API key has used its request quota for today.',
  USER_BANNED: 'The owner of this API key cannot sign in.',
};
const forGrant: Record<string, string> = {
  FORBIDDEN: 'This access token does not carry the mcp scope.',
  QUOTA_EXCEEDED: 'This access token has used its request quota for today.',
  USER_BANNED: 'The person who authorized this access token cannot sign in.',
};

export function mcpRefusal(ctx: Context, err: AppError, publicUrl: string | null): void {
  const caller = (ctx.state as { caller?: Caller }).caller;
  // A signed-in browser session is refused too; telling it about key permissions would mislead.
  const text = err.code === 'FORBIDDEN' && caller?.kind === 'session'
    ? 'The MCP server takes an API key with MCP access, not a session; create one in Settings → Developers.'
    : caller?.kind === 'grant' ? forGrant[err.code] ?? err.detail
    // An invalid credential's detail already says which kind it was (key or access token).
    : err.code === 'INVALID_API_KEY' ? err.detail : description[err.code] ?? err.detail;
  ctx.status = 401;
  const metadata = quoted(resourceMetadataUrl(ctx, publicUrl));
  ctx.set('WWW-Authenticate', `Bearer error="invalid_token", scope="mcp", resource_metadata=${metadata}`);
  // Named after this request's Host: a shared cache must not hand it to someone who sent another.
  if (!publicUrl) ctx.set('Cache-Control', 'no-store');
  // The rate-limit fields were set by the quota step before it refused; Retry-After comes from the error.
  if (err.code === 'QUOTA_EXCEEDED') ctx.set(errorHeaders(err));
  ctx.body = { error: 'invalid_token', error_description: text };
}
