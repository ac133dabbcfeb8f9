import { keysOn, type Config } from '../../config.ts';
import { decodeCursor, encodeCursor } from '../cursor.ts';
import type { Pool } from '../../store/db.ts';
import * as keys from '../../store/apikeys.ts';
import type { Clock } from '../clock.ts';
import type { CounterStore } from '../../store/quota/engine.ts';
import { utcDayStart } from '../../store/quota/day.ts';
import { AppError, notFound, type Swallowed } from '../../errors.ts';
import type { RequestMeta } from '../accounts.ts';
import { quotaCounterName } from '../quota/decide.ts';
import { type Actor, mint } from './mint.ts';
import { type Forget, withChange } from '../invalidation.ts';
import { createLeakRevoker } from './leaked.ts';
import type { ApiKeyView, KeyState, Permissions } from './types.ts';
import { actorOf, type EventActor } from '../events/types.ts';
import { permissionWords, resolveGrant, type GrantInput, type ScopeCatalog } from '../../policy/scopes.ts';
import { expiresSoon, expiryAtCreate, lifetimeBoundedExpiry, type ExpiryChoice } from './expiry.ts';

export interface KeyServiceDeps {
  pool: Pool;
  counters: CounterStore;
  config: Pick<Config, 'apiKeys' | 'surface' | 'billingScope' | 'plans' | 'defaultPlan' | 'defaultApiRateLimit' | 'defaultRateLimits'>;
  clock: Clock;
  /** This instance's cache of verified keys, told after commit when a key may have stopped working. */
  forget?: Forget;
  /** The scopes declared now; read per create, since a policy apply can change them. */
  scopes: () => ScopeCatalog;
  swallowed?: Swallowed;
}

/** `leaked` is the leak revoker's (leaked.ts), which revokes many keys at once by the same rule. */
export type RevokeReason = 'owner' | 'admin';
export type { Leak } from './leaked.ts';

export interface LeakedKeyView { id: string; name: string; start: string; leakedAt: string; leakedUrl: string }

export interface CreateInput extends GrantInput, ExpiryChoice { name: string }
export interface UpdateInput { name?: string; enabled?: boolean; expiresAt?: Date | null }

// The ApiKey object's `ai` and `mcp` booleans are the API's shorthand for these two scopes.
const holdsAccess = (p: Permissions, scope: 'ai' | 'mcp') => Array.isArray(p[scope]) && p[scope].includes('access');

export function keyView(row: keys.ApiKeyRow, now: Date, used = 0): ApiKeyView {
  let state: KeyState = 'active';
  if (!row.enabled) state = 'disabled';
  else if (row.expires_at && row.expires_at <= now) state = 'expired';
  else if (used >= row.request_quota) state = 'rate-limited';
  return {
    id: row.id,
    name: row.name,
    start: row.start,
    prefix: row.prefix,
    permissions: row.permissions,
    ai: holdsAccess(row.permissions, 'ai'),
    mcp: holdsAccess(row.permissions, 'mcp'),
    requestQuota: { limit: row.request_quota, window: 'day' },
    // Rows read before the column existed in a query (an older select) have none.
    rateLimits: row.rate_limits ?? [],
    state,
    enabled: row.enabled,
    expiresAt: row.expires_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
    lastUsedAt: row.last_used_at?.toISOString() ?? null,
    rotatedFrom: row.rotated_from,
    rotatedTo: row.rotated_to,
    expiresSoon: expiresSoon(row.expires_at, now),
  };
}

export { KEY_FILTER_STATES, type KeyFilter } from '../../store/apikeys.ts';

export type KeyService = ReturnType<typeof createKeyService>;

const FEATURE_OFF: Record<'ai' | 'mcpServer', string> = { ai: 'AI is turned off', mcpServer: 'The MCP server is turned off' };

export function createKeyService({ pool, counters, config, clock, forget, scopes, swallowed }: KeyServiceDeps) {
  const apiKeys = keysOn(config);
  const maxLifetimeDays = apiKeys?.maxLifetimeDays;
  const requireEnabled = () => {
    if (!apiKeys) throw new AppError('API_KEYS_DISABLED', 'API keys are turned off on this server.');
    return apiKeys;
  };

  async function usageOf(rows: keys.ApiKeyRow[]): Promise<number[]> {
    const now = clock();
    try {
      return await counters.read(rows.map((r) => quotaCounterName(r.id)), utcDayStart(now));
    } catch {
      // The list stays readable while the counter store is down; `rate-limited` is then unknown.
      return rows.map(() => 0);
    }
  }

  async function views(rows: keys.ApiKeyRow[]): Promise<ApiKeyView[]> {
    const used = await usageOf(rows);
    const now = clock();
    return rows.map((r, i) => keyView(r, now, used[i]));
  }

  function grantOf(input: GrantInput): Permissions {
    const catalog = scopes();
    const grant = resolveGrant(catalog, config.surface.features, input);
    if (grant.ok) return grant.permissions;
    if ('errors' in grant) {
      const first = grant.errors[0]!;
      throw new AppError('VALIDATION_FAILED', `Invalid request body: ${first.path} ${first.message}.`, { errors: grant.errors });
    }
    const scope = grant.featureOff;
    const refused = permissionWords(catalog, [scope.name]);
    throw new AppError('FEATURE_DISABLED', `${FEATURE_OFF[scope.requires!]}, so a key cannot be given ${refused}.`);
  }

  /** The one way one key is revoked: by its owner or an admin. */
  async function revoke(
    actor: EventActor, ownerId: string | null, keyId: string, meta: RequestMeta, reason: RevokeReason,
  ): Promise<boolean> {
    const row = await withChange(pool, forget, async ({ tx, invalidate, record }) => {
      const revoked = await keys.revokeKey(tx, keyId, ownerId, clock());
      if (!revoked) return null;
      const actorUserId = actor.kind === 'user' ? actor.userId : null;
      await record({
        audit: { type: 'API_KEY_REVOKED', actorUserId, ownerUserId: revoked.user_id, keyId, ...meta },
        event: {
          type: 'key.revoked',
          data: { keyId, userId: revoked.user_id, name: revoked.name, prefix: revoked.prefix, start: revoked.start, reason, actor },
        },
      });
      await invalidate({ type: 'key', id: revoked.id });
      return revoked;
    });
    return row !== null;
  }

  /** The owner's change (`ownerId` theirs) or an admin's (`ownerId` null): one validation, one audit entry. */
  async function update(actorId: string, ownerId: string | null, keyId: string,
    input: UpdateInput, meta: RequestMeta): Promise<ApiKeyView> {
    requireEnabled();
    const now = clock();
    // Any instant, the past included: that is how an owner expires a key now.
    if (input.expiresAt !== undefined) lifetimeBoundedExpiry(input.expiresAt, now, maxLifetimeDays, 'expiresAt');
    const row = await withChange(pool, forget, async ({ tx, invalidate, record }) => {
      const before = await keys.lockKeyFields(tx, keyId);
      const updated = await keys.updateKey(tx, keyId, ownerId, input, now);
      if (!updated || !before) return null;
      await invalidate({ type: 'key', id: updated.id });
      const changes = [
        ...(before.name !== updated.name ? ['name'] : []),
        ...(before.enabled !== updated.enabled ? ['enabled'] : []),
        ...(before.expires_at?.getTime() !== updated.expires_at?.getTime() ? ['expiresAt'] : []),
      ];
      // An update that changes nothing is no event.
      if (changes.length > 0) {
        await record({
          audit: { type: 'API_KEY_UPDATED', actorUserId: actorId, ownerUserId: updated.user_id, keyId, ...meta, detail: { changes } },
          event: {
            type: 'key.updated',
            data: { keyId, userId: updated.user_id, name: updated.name, prefix: updated.prefix, changes, enabled: updated.enabled,
              expiresAt: updated.expires_at?.toISOString() ?? null, actor: actorOf({ userId: actorId }) },
          },
        });
      }
      return updated;
    });
    if (!row) throw notFound('API key');
    return (await views([row]))[0]!;
  }

  return {
    async createKey(actor: Actor, input: CreateInput, meta: RequestMeta): Promise<{ key: ApiKeyView; plaintext: string }> {
      const cfg = requireEnabled();
      const permissions = grantOf(input);
      const now = clock();
      const expiresAt = expiryAtCreate(input, now, maxLifetimeDays);
      const { key, plaintext } = await mint({ pool, counters, config, forget, swallowed }, actor, now, {
        ownerGone: 'user',
        spentOn: 'created',
        async prepare({ tx }) {
          if (cfg.variant === 'A' && (await keys.countLiveKeys(tx, actor.userId)) >= cfg.maxKeysPerUser) {
            throw new AppError('API_KEY_LIMIT', `You already hold ${cfg.maxKeysPerUser} keys, the most allowed. `
              + 'Revoke one you no longer use, then create the new one.');
          }
          return { name: input.name, permissions, expiresAt };
        },
        record: ({ record }, k) => record({
          audit: { type: 'API_KEY_CREATED', actorUserId: actor.userId, ownerUserId: actor.userId, keyId: k.id, ...meta },
          event: {
            type: 'key.created',
            data: {
              keyId: k.id, userId: k.user_id, name: k.name, prefix: k.prefix, start: k.start,
              expiresAt: k.expires_at?.toISOString() ?? null, actor: actorOf(actor),
            },
          },
        }),
      });
      return { key: keyView(key, now), plaintext };
    },

    async listKeys(userId: string): Promise<ApiKeyView[]> {
      requireEnabled();
      return views(await keys.listLiveKeys(pool, userId, clock()));
    },

    /** A key the caller may not see answers exactly like an unknown one. */
    async getKey(userId: string, keyId: string): Promise<ApiKeyView> {
      requireEnabled();
      const row = await keys.findLiveKey(pool, keyId, clock());
      if (!row || row.user_id !== userId) throw notFound('API key');
      return (await views([row]))[0]!;
    },

    updateKey: (userId: string, keyId: string, input: UpdateInput,
      meta: RequestMeta = { ip: null, userAgent: null }): Promise<ApiKeyView> =>
      update(userId, userId, keyId, input, meta),

    /** An admin disables, enables or sets the expiry of anyone's key, audited with the admin as actor. */
    adminUpdateKey: (adminId: string, keyId: string, input: Pick<UpdateInput, 'enabled' | 'expiresAt'>,
      meta: RequestMeta): Promise<ApiKeyView> =>
      update(adminId, null, keyId, input, meta),

    async revokeKey(userId: string, keyId: string, meta: RequestMeta): Promise<void> {
      requireEnabled();
      if (!(await revoke(actorOf({ userId }), userId, keyId, meta, 'owner'))) throw notFound('API key');
    },

    async adminRevokeKey(adminId: string, keyId: string, meta: RequestMeta): Promise<void> {
      requireEnabled();
      if (!(await revoke(actorOf({ userId: adminId }), null, keyId, meta, 'admin'))) throw notFound('API key');
    },

    /** The owner's keys revoked because they were found public, with where (the last 30 days). */
    async listLeakedKeys(userId: string): Promise<LeakedKeyView[]> {
      requireEnabled();
      return (await keys.listLeakedKeys(pool, userId, clock()))
        .map((r) => ({ id: r.id, name: r.name, start: r.start, leakedAt: r.leaked_at.toISOString(), leakedUrl: r.leaked_url }));
    },

    /** Keys found public (id → where): revoked at once on every instance; answers those that were live. */
    revokeLeaked: createLeakRevoker({ pool, clock, forget }),

    async adminListKeys(opts: { limit: number; cursor: string | null; filter?: keys.KeyFilter }) {
      requireEnabled();
      const after = opts.cursor ? decodeCursor(opts.cursor) : null;
      const rows = await keys.listKeysPage(pool, opts.limit + 1, after, clock(), opts.filter ?? {});
      const page = rows.slice(0, opts.limit);
      const list = await views(page);
      return {
        keys: list.map((k, i) => {
          const row = page[i]!;
          // A revoked key is only listed when asked for; its state says so rather than what it was.
          return {
            ...k,
            ...(row.revoked_at ? { state: 'revoked' as const } : {}),
            revokedAt: row.revoked_at?.toISOString() ?? null,
            owner: { id: row.user_id, name: row.owner_name, email: row.owner_email },
          };
        }),
        nextCursor: rows.length > opts.limit ? encodeCursor(page[page.length - 1]!) : null,
      };
    },

  };
}
