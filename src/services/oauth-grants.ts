import type { Config } from '../config.ts';
import { withTransaction, type Pool } from '../store/db.ts';
import { findUserById } from '../store/users.ts';
import { insertAuditEntry } from '../store/audit.ts';
import * as store from '../store/oauth.ts';
import type { RequestMeta, UserRecord } from './accounts.ts';
import type { Clock } from './clock.ts';
import { notFound } from './errors.ts';
import { stampedQuota } from './plans.ts';

// A grant is one person's consent to one MCP client. Its tokens live in oidc-provider's storage;
// whether they still count is decided here, on every request, from the grant and its owner, so a
// revocation, a ban or a deleted account stops them on every instance at once with no cache to
// invalidate.

export interface GrantView { id: string; clientId: string; clientName: string; createdAt: string; lastUsedAt: string | null }

/** What a presented access token is, as far as the library can tell: nothing of ours yet. */
export interface IssuedToken { grantId: string; accountId: string; scopes: string[]; audience: string[] }

export interface VerifiedGrant { id: string; clientId: string; clientName: string; requestQuota: number }

export type TokenResult =
  | { status: 'valid'; grant: VerifiedGrant; owner: UserRecord }
  | { status: 'unknown' | 'revoked' | 'owner-banned' | 'wrong-resource' };

export interface GrantServiceDeps {
  pool: Pool;
  clock: Clock;
  config: Pick<Config, 'apiKeys' | 'billingScope' | 'plans' | 'defaultPlan' | 'defaultApiRateLimit'>;
}

// Writes of last use are spread out: one per grant per this many ms and instance is plenty for a
// "last used" column, and a token used in a loop must not turn every request into a row write.
const TOUCH_EVERY_MS = 5_000;

const GRANT_ID = /^[A-Za-z0-9_-]{1,64}$/;

const view = (g: store.GrantRow): GrantView => ({
  id: g.id, clientId: g.client_id, clientName: g.client_name,
  createdAt: g.created_at.toISOString(), lastUsedAt: g.last_used_at?.toISOString() ?? null,
});

export type GrantService = ReturnType<typeof createGrantService>;

export function createGrantService({ pool, clock, config }: GrantServiceDeps) {
  const touched = new Map<string, number>();

  const touch = (grantId: string) => {
    const now = clock().getTime();
    if ((touched.get(grantId) ?? 0) > now - TOUCH_EVERY_MS) return;
    touched.set(grantId, now);
    if (touched.size > 10_000) touched.clear();
    // Last use is a hint shown on the page; losing one write must not refuse the request.
    store.touchGrant(pool, grantId).catch(() => touched.delete(grantId));
  };

  return {
    /** After consent: the grant the library saved becomes one the person can see and revoke. */
    async recordGrant(g: { id: string; userId: string; clientId: string; clientName: string }, meta: RequestMeta): Promise<GrantView> {
      return withTransaction(pool, async (tx) => {
        const owner = await findUserById(tx, g.userId);
        if (!owner) throw notFound('account');
        const requestQuota = stampedQuota(config, { ownerPlan: owner.plan, activeOrganizationPlan: null, hasActiveOrganization: false });
        const row = await store.insertGrant(tx, { ...g, requestQuota });
        await insertAuditEntry(tx, { type: 'OAUTH_GRANT_CREATED', actorUserId: g.userId, ownerUserId: g.userId, keyId: null, grantId: g.id, ...meta });
        return view(row);
      });
    },

    async listGrants(userId: string): Promise<GrantView[]> {
      return (await store.listLiveGrants(pool, userId)).map(view);
    },

    /** The owner revokes: unknown, foreign and already revoked grants all answer alike. */
    async revokeGrant(userId: string, grantId: string, meta: RequestMeta): Promise<void> {
      if (!GRANT_ID.test(grantId)) throw notFound('grant');
      const row = await withTransaction(pool, async (tx) => {
        const revoked = await store.revokeGrant(tx, grantId, userId);
        if (revoked) await insertAuditEntry(tx, { type: 'OAUTH_GRANT_REVOKED', actorUserId: userId, ownerUserId: userId, keyId: null, grantId, ...meta });
        return revoked;
      });
      if (!row) throw notFound('grant');
      // The grant's row already refuses its tokens; dropping them only tidies the store.
      await store.destroyByGrant(pool, grantId);
    },

    /** The library dropped a grant (a reused refresh token, /oauth/revoke): it is revoked here too. */
    async grantDestroyed(grantId: string): Promise<void> {
      await withTransaction(pool, async (tx) => {
        const revoked = await store.revokeGrant(tx, grantId, null);
        if (revoked) await insertAuditEntry(tx, { type: 'OAUTH_GRANT_REVOKED', actorUserId: revoked.user_id, ownerUserId: revoked.user_id, keyId: null, grantId, ip: null, userAgent: null });
      });
    },

    /** Whether the owner may still be acted as: the library asks before it issues or refreshes. */
    async accountUsable(userId: string): Promise<boolean> {
      const owner = await findUserById(pool, userId);
      return owner !== null && !owner.banned;
    },

    /** A token the library found and did not refuse, checked against its grant, owner and resource. */
    async verify(token: IssuedToken | null, resource: string): Promise<TokenResult> {
      if (!token) return { status: 'unknown' };
      if (!token.audience.includes(resource) || !token.scopes.includes('mcp')) return { status: 'wrong-resource' };
      const row = await store.findLiveGrantWithOwner(pool, token.grantId);
      if (!row || row.user_id !== token.accountId) return { status: 'revoked' };
      if (row.owner_banned) return { status: 'owner-banned' };
      touch(row.id);
      return {
        status: 'valid',
        grant: { id: row.id, clientId: row.client_id, clientName: row.client_name, requestQuota: row.request_quota },
        owner: { id: row.user_id, email: row.owner_email, name: row.owner_name, role: row.owner_role, banned: false, plan: row.owner_plan },
      };
    },
  };
}
