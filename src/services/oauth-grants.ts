import { keysOn, type Config } from '../config.ts';
import { withTransaction, type Pool } from '../store/db.ts';
import { findUserById } from '../store/users.ts';
import { lockOwner } from '../store/apikeys.ts';
import type { CounterStore } from '../store/quota/engine.ts';
import { secondsUntilNextUtcDay, utcDayStart } from '../store/quota/day.ts';
import { recordChange, type Recorded } from './events/record.ts';
import { actorOf } from './events/types.ts';
import * as store from '../store/oauth.ts';
import type { RequestMeta, UserRecord } from './accounts.ts';
import type { Clock } from './clock.ts';
import { AppError, notFound, type Swallowed } from '../errors.ts';
import { stampedLimits } from './plans.ts';
import type { RateLimitRule } from '../config.ts';
import { createsCounter, failedCreate } from './keys/mint.ts';

// A grant is one person's consent to one MCP client. Its tokens live in oidc-provider's storage;
// whether they still count is decided here, on every request, from the grant and its owner, so a
// revocation, a ban or a deleted account stops them on every instance at once with no cache to
// invalidate.

export interface GrantView { id: string; clientId: string; clientName: string; createdAt: string; lastUsedAt: string | null }

/** What a presented access token is, as far as the library can tell: nothing of ours yet. */
export interface IssuedToken { grantId: string; accountId: string; scopes: string[]; audience: string[] }

export interface VerifiedGrant { id: string; clientId: string; clientName: string; requestQuota: number; rateLimits: RateLimitRule[] }

export type TokenResult =
  | { status: 'valid'; grant: VerifiedGrant; owner: UserRecord }
  | { status: 'unknown' | 'revoked' | 'owner-banned' | 'wrong-resource' };

export interface GrantServiceDeps {
  pool: Pool;
  clock: Clock;
  config: Pick<Config, 'apiKeys' | 'billingScope' | 'plans' | 'defaultPlan' | 'defaultApiRateLimit' | 'defaultRateLimits' | 'oauth'>;
  counters: CounterStore;
  swallowed?: Swallowed;
}

/** Registrations one client address may make per minute. */
export const REGISTRATIONS_PER_MINUTE = 20;
const DAY_SECONDS = 86_400;

// Writes of last use are spread out: one per grant per this many ms and instance is plenty for a
// "last used" column, and a token used in a loop must not turn every request into a row write.
const TOUCH_EVERY_MS = 5_000;

const GRANT_ID = /^[A-Za-z0-9_-]{1,64}$/;

const view = (g: store.GrantRow): GrantView => ({
  id: g.id, clientId: g.client_id, clientName: g.client_name,
  createdAt: g.created_at.toISOString(), lastUsedAt: g.last_used_at?.toISOString() ?? null,
});

export type GrantService = ReturnType<typeof createGrantService>;

/** A grant's revocation: its audit entry and event. */
const grantRevoked = (grantId: string, g: store.GrantRow, actor: { userId: string } | 'system', meta: RequestMeta): Recorded => ({
  audit: {
    type: 'OAUTH_GRANT_REVOKED', actorUserId: actor === 'system' ? g.user_id : actor.userId,
    ownerUserId: g.user_id, keyId: null, grantId, ...meta,
  },
  event: {
    type: 'grant.revoked',
    data: { grantId, userId: g.user_id, clientId: g.client_id, clientName: g.client_name, actor: actorOf(actor) },
  },
});

export function createGrantService({ pool, clock, config, counters, swallowed }: GrantServiceDeps) {
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
    /**
     * After consent: checks the owner's limits, has the library save its grant (`save` answers its
     * id), and makes it one the person can see and revoke. A grant carries a daily quota of its
     * own, so each one is spent like a key create: it counts toward `maxCreatesPerDay` (Variant A,
     * the same counter) and live grants toward `oauth.maxGrantsPerUser`.
     */
    async recordGrant(
      g: { userId: string; clientId: string; clientName: string; save: () => Promise<string> },
      meta: RequestMeta,
    ): Promise<GrantView> {
      const now = clock();
      const day = utcDayStart(now);
      const keys = keysOn(config);
      let counted = false;
      try {
        return await withTransaction(pool, async (tx) => {
          // The owner's row lock serializes grants and key creates per person on every instance.
          if (!(await lockOwner(tx, g.userId))) throw notFound('account');
          const max = config.oauth.maxGrantsPerUser;
          if ((await store.countLiveGrants(tx, g.userId)) >= max) {
            throw new AppError('GRANT_LIMIT', `You already have ${max} connected apps, the most allowed. Disconnect one you no longer `
              + 'use under Settings → Developers → Connected apps, then connect this one again.');
          }
          if (keys?.variant === 'A') {
            const creates = await counters.increment(createsCounter(g.userId), day, DAY_SECONDS + 3600);
            counted = true;
            if (creates > keys.maxCreatesPerDay) {
              throw new AppError(
                'GRANT_LIMIT',
                `You have created or connected ${keys.maxCreatesPerDay} keys and apps today, the most allowed per day. `
                  + 'Try again after midnight UTC.',
                {},
                { retryAfterSeconds: secondsUntilNextUtcDay(now) },
              );
            }
          }
          const owner = await findUserById(tx, g.userId);
          if (!owner) throw notFound('account');
          const { requestQuota, rateLimits } = stampedLimits(config, {
            ownerPlan: owner.plan, activeOrganizationPlan: null, hasActiveOrganization: false,
          });
          const id = await g.save();
          const row = await store.insertGrant(tx, {
            id, userId: g.userId, clientId: g.clientId, clientName: g.clientName, requestQuota, rateLimits,
          });
          await recordChange(tx, {
            audit: { type: 'OAUTH_GRANT_CREATED', actorUserId: g.userId, ownerUserId: g.userId, keyId: null, grantId: id, ...meta },
            event: {
              type: 'grant.created',
              data: { grantId: id, userId: g.userId, clientId: g.clientId, clientName: g.clientName, actor: actorOf({ userId: g.userId }) },
            },
          });
          return view(row);
        });
      } catch (e) {
        return failedCreate(e, counted ? { counters, userId: g.userId, day, swallowed } : null);
      }
    },

    /**
     * Dynamic registration is anonymous: each client address may register this many a minute.
     * Answers nothing when allowed; throws 429 with the seconds to the next window when not.
     */
    async registrationAllowed(address: string): Promise<void> {
      const now = clock().getTime();
      const windowStart = new Date(now - (now % 60_000));
      const made = await counters.increment(`oauth-registrations:${address}`, windowStart, 120);
      if (made > REGISTRATIONS_PER_MINUTE) {
        const retryAfterSeconds = Math.max(1, Math.ceil((windowStart.getTime() + 60_000 - now) / 1000));
        throw new AppError(
          'TOO_MANY_REGISTRATIONS',
          `This address has registered ${REGISTRATIONS_PER_MINUTE} clients in the last minute, the most allowed. Try again in a minute.`,
          {},
          { retryAfterSeconds },
        );
      }
    },

    /** The store's hourly clean-up (store.sweepOAuth), on the service's clock. */
    async sweep(): Promise<{ expired: number; unusedClients: number; endedGrants: number }> {
      return store.sweepOAuth(pool, clock());
    },

    async listGrants(userId: string): Promise<GrantView[]> {
      return (await store.listLiveGrants(pool, userId)).map(view);
    },

    /** The owner revokes: unknown, foreign and already revoked grants all answer alike. */
    async revokeGrant(userId: string, grantId: string, meta: RequestMeta): Promise<void> {
      if (!GRANT_ID.test(grantId)) throw notFound('grant');
      const row = await withTransaction(pool, async (tx) => {
        const revoked = await store.revokeGrant(tx, grantId, userId);
        if (revoked) await recordChange(tx, grantRevoked(grantId, revoked, { userId }, meta));
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
        if (revoked) await recordChange(tx, grantRevoked(grantId, revoked, 'system', { ip: null, userAgent: null }));
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
        grant: {
          id: row.id, clientId: row.client_id, clientName: row.client_name,
          requestQuota: row.request_quota, rateLimits: row.rate_limits ?? [],
        },
        owner: { id: row.user_id, email: row.owner_email, name: row.owner_name, role: row.owner_role, banned: false, plan: row.owner_plan },
      };
    },
  };
}
