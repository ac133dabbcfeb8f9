// What a stored key row means for a request presenting it: its standing, which the verifier's
// cache keeps per key, and that standing judged against the key's expiry at the moment of use.
// The order of the outcomes lives here alone: revoked, disabled, expired, a banned owner, valid.
import type * as keys from '../../store/apikeys.ts';
import type { AuthResult, Permissions } from './types.ts';

export const scopesOf = (p: Permissions): string[] =>
  Object.entries(p).filter(([, actions]) => Array.isArray(actions) && actions.length > 0).map(([scope]) => scope).sort();

export const UNKNOWN_KEY: AuthResult = Object.freeze({ status: 'unknown' });
const EXPIRED: AuthResult = Object.freeze({ status: 'expired' });

/** What a stored row means, its expiry aside: what the verifier's cache keeps per key. */
export function standingOf(row: keys.KeyWithOwnerRow): AuthResult {
  if (row.revoked_at) return { status: 'revoked' };
  if (!row.enabled) return { status: 'disabled' };
  if (row.owner_banned) return { status: 'owner-banned' };
  return {
    status: 'valid',
    key: {
      id: row.id, userId: row.user_id, name: row.name, start: row.start,
      scopes: scopesOf(row.permissions), permissions: row.permissions,
      requestQuota: row.request_quota, rateLimits: row.rate_limits ?? [], expiresAt: row.expires_at,
    },
    owner: {
      id: row.user_id, email: row.owner_email, name: row.owner_name,
      role: row.owner_role, banned: row.owner_banned, plan: row.owner_plan,
    },
  };
}

/** A standing at `now`: a passed expiry ranks after revoked and disabled, before a banned owner. */
export function judgedAt(standing: AuthResult, expiresAt: Date | null, now: Date): AuthResult {
  if (standing.status === 'revoked' || standing.status === 'disabled') return standing;
  return expiresAt !== null && expiresAt <= now ? EXPIRED : standing;
}
