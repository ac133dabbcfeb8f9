// What a stored key row means for a request presenting it. Its own module so that the verifier
// (which caches the answer) and the key service (which shows keys) share it without importing
// each other.
import type * as keys from '../../store/apikeys.ts';
import type { AuthResult, Permissions } from './types.ts';

export const scopesOf = (p: Permissions): string[] =>
  Object.entries(p).filter(([, actions]) => Array.isArray(actions) && actions.length > 0).map(([scope]) => scope).sort();

export function authResultOf(row: keys.KeyWithOwnerRow | null, now: Date): AuthResult {
  if (!row) return { status: 'unknown' };
  if (row.revoked_at) return { status: 'revoked' };
  if (!row.enabled) return { status: 'disabled' };
  if (row.expires_at && row.expires_at <= now) return { status: 'expired' };
  if (row.owner_banned) return { status: 'owner-banned' };
  return {
    status: 'valid',
    key: { id: row.id, userId: row.user_id, name: row.name, start: row.start, scopes: scopesOf(row.permissions), permissions: row.permissions, requestQuota: row.request_quota, rateLimits: row.rate_limits ?? [], expiresAt: row.expires_at },
    owner: { id: row.user_id, email: row.owner_email, name: row.owner_name, role: row.owner_role, banned: row.owner_banned, plan: row.owner_plan },
  };
}
