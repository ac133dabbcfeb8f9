// What a stored key row means for a request presenting it: its standing, which the verifier's
// cache keeps per key, and that standing judged against the key's expiry at the moment of use.
// The order of the outcomes lives here alone: revoked, disabled, expired, a banned owner, valid.
import type * as keys from '../../store/apikeys.ts';
import type { AuthResult, Permissions } from './types.ts';

export const scopesOf = (p: Permissions): string[] =>
  Object.entries(p).filter(([, actions]) => Array.isArray(actions) && actions.length > 0).map(([scope]) => scope).sort();

/**
 * One frozen copy of each distinct set of permissions among the keys in memory, with its scopes.
 * Most keys hold one of a few sets; sharing it lets everything worked out per permissions object
 * (the atoms a decision reads, the sets it tests) be worked out once per set, not once per cached
 * key. The first row's own object becomes the shared one, frozen. Held weakly: a set no cached key
 * holds any more is forgotten with it.
 */
const sharedByText = new Map<string, WeakRef<Permissions>>();
const scopesByShared = new WeakMap<Permissions, string[]>();
const forgetShared = new FinalizationRegistry<string>((text) => {
  if (sharedByText.get(text)?.deref() === undefined) sharedByText.delete(text);
});
function sharedPermissions(permissions: Permissions): { permissions: Permissions; scopes: string[] } {
  const text = JSON.stringify(permissions);
  let shared = sharedByText.get(text)?.deref();
  if (!shared) {
    for (const actions of Object.values(permissions)) if (Array.isArray(actions)) Object.freeze(actions);
    shared = Object.freeze(permissions);
    scopesByShared.set(shared, Object.freeze(scopesOf(shared)) as string[]);
    sharedByText.set(text, new WeakRef(shared));
    forgetShared.register(shared, text);
  }
  return { permissions: shared, scopes: scopesByShared.get(shared)! };
}

export const UNKNOWN_KEY: AuthResult = Object.freeze({ status: 'unknown' });
const EXPIRED: AuthResult = Object.freeze({ status: 'expired' });

/** What a stored row means, its expiry aside: what the verifier's cache keeps per key. */
export function standingOf(row: keys.KeyWithOwnerRow): AuthResult {
  if (row.revoked_at) return { status: 'revoked' };
  if (!row.enabled) return { status: 'disabled' };
  if (row.owner_banned) return { status: 'owner-banned' };
  const { permissions, scopes } = sharedPermissions(row.permissions);
  return {
    status: 'valid',
    key: {
      id: row.id, userId: row.user_id, name: row.name, start: row.start, scopes, permissions,
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
