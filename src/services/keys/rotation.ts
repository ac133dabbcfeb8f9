import type { Config } from '../../config.ts';
import type { Pool } from '../../store/db.ts';
import * as keys from '../../store/apikeys.ts';
import * as rotation from '../../store/rotation.ts';
import * as audit from '../../store/audit.ts';
import * as users from '../../store/users.ts';
import * as orgs from '../../store/organizations.ts';
import { type Forget, withChange } from '../invalidation.ts';
import type { Clock } from '../clock.ts';
import { type CounterStore, secondsUntilNextUtcDay, utcDayStart } from '../../store/counters.ts';
import { AppError, notFound } from '../../errors.ts';
import { stampedQuota } from '../plans.ts';
import { sha256 } from '../secrets.ts';
import type { RequestMeta } from '../accounts.ts';
import { generateKey, keyStart } from './format.ts';
import { successorExpiry } from './expiry.ts';
import { type Actor, createsCounter, failedCreate, keyView } from './service.ts';
import type { ApiKeyView } from './types.ts';

// Rotation (CONTRACT 14): a successor with the same name and permissions, a quota stamped anew from
// the owner's plan (how a user picks up a new plan's ceiling), the same lifetime length; the old key
// works until the grace period ends. The change, its audit entry and the signal commit together.

export const DEFAULT_GRACE_SECONDS = 86_400;
const DAY_SECONDS = 86_400;

export interface RotationDeps {
  pool: Pool;
  counters: CounterStore;
  config: Pick<Config, 'apiKeys' | 'billingScope' | 'plans' | 'defaultPlan' | 'defaultApiRateLimit'>;
  clock: Clock;
  /** This instance's cache of verified keys: after commit it must see the old key's new expiry at once. */
  forget?: Forget;
}

export type RotationService = ReturnType<typeof createRotationService>;

export function createRotationService({ pool, counters, config, clock, forget }: RotationDeps) {
  return {
    async rotateKey(actor: Actor, keyId: string, gracePeriodSeconds: number, meta: RequestMeta): Promise<{ key: ApiKeyView; plaintext: string; previous: ApiKeyView }> {
      const cfg = config.apiKeys;
      if (!cfg.enabled) throw new AppError('API_KEYS_DISABLED', 'API keys are turned off on this server.');
      const now = clock();
      const day = utcDayStart(now);
      const plaintext = generateKey(cfg.prefix);
      let counted = false;
      try {
        const result = await withChange(pool, forget, async ({ tx, invalidate }) => {
          // Same lock order as a create (owner, then key), so a create and a rotation never deadlock.
          if (!(await keys.lockOwner(tx, actor.userId))) throw notFound('API key');
          const old = await rotation.lockRotatableKey(tx, keyId, actor.userId, now);
          // Unknown, foreign, revoked, expired or already rotated: all answer alike.
          if (!old) throw notFound('API key');
          // No maxKeysPerUser check: the old key stops counting as the new one starts, so a user at
          // the cap can still rotate. The daily create limit does count a rotation, else rotating
          // in a loop would mint fresh quotas without end.
          if (cfg.variant === 'A') {
            const creates = await counters.increment(createsCounter(actor.userId), day, DAY_SECONDS + 3600);
            counted = true;
            if (creates > cfg.maxCreatesPerDay) {
              throw new AppError('API_KEY_DAILY_LIMIT', `You have created or rotated ${cfg.maxCreatesPerDay} keys today, the most allowed per day. Try again after midnight UTC.`, {}, { retryAfterSeconds: secondsUntilNextUtcDay(now) });
            }
          }
          const owner = await users.findUserById(tx, actor.userId);
          const org = actor.activeOrganizationId ? await orgs.findOrganizationById(tx, actor.activeOrganizationId) : null;
          const requestQuota = stampedQuota(config, { ownerPlan: owner?.plan ?? null, activeOrganizationPlan: org?.plan ?? null, hasActiveOrganization: org !== null });
          const successor = await keys.insertKey(tx, {
            userId: actor.userId, name: old.name, keyHash: sha256(plaintext), start: keyStart(plaintext), prefix: cfg.prefix,
            permissions: old.permissions, requestQuota, expiresAt: successorExpiry(old, now, cfg.maxLifetimeDays), rotatedFrom: old.id,
          });
          const retired = await rotation.markRotated(tx, old.id, successor.id, new Date(now.getTime() + gracePeriodSeconds * 1000));
          await audit.insertAuditEntry(tx, { type: 'API_KEY_ROTATED', actorUserId: actor.userId, ownerUserId: actor.userId, keyId: successor.id, previousKeyId: old.id, ...meta });
          // Every instance drops its cached record of the old key, so a grace of 0 refuses it everywhere at once.
          await invalidate({ type: 'key', id: old.id });
          return { successor, retired };
        });
        return { key: keyView(result.successor, now), plaintext, previous: keyView(result.retired, now) };
      } catch (e) {
        return failedCreate(e, counted ? { counters, userId: actor.userId, day } : null);
      }
    },
  };
}
