import { keysOn, type Config } from '../../config.ts';
import type { Pool } from '../../store/db.ts';
import * as rotation from '../../store/rotation.ts';
import { actorOf } from '../events/types.ts';
import type { Forget } from '../invalidation.ts';
import type { Clock } from '../clock.ts';
import type { CounterStore } from '../../store/quota/engine.ts';
import { AppError, notFound, type Swallowed } from '../../errors.ts';
import type { RequestMeta } from '../accounts.ts';
import { successorExpiry } from './expiry.ts';
import { type Actor, mint } from './mint.ts';
import { keyView } from './service.ts';
import type { ApiKeyView } from './types.ts';

// Rotation: a successor with the same name and permissions, a quota stamped anew from
// the owner's plan (how a user picks up a new plan's ceiling), the same lifetime length; the old key
// works until the grace period ends. The change, its audit entry and the signal commit together.

export const DEFAULT_GRACE_SECONDS = 86_400;

export interface RotationDeps {
  pool: Pool;
  counters: CounterStore;
  config: Pick<Config, 'apiKeys' | 'billingScope' | 'plans' | 'defaultPlan' | 'defaultApiRateLimit' | 'defaultRateLimits'>;
  clock: Clock;
  /** This instance's cache of verified keys: after commit it must see the old key's new expiry at once. */
  forget?: Forget;
  swallowed?: Swallowed;
}

export type RotationService = ReturnType<typeof createRotationService>;

export function createRotationService({ pool, counters, config, clock, forget, swallowed }: RotationDeps) {
  return {
    async rotateKey(
      actor: Actor, keyId: string, gracePeriodSeconds: number, meta: RequestMeta,
    ): Promise<{ key: ApiKeyView; plaintext: string; previous: ApiKeyView }> {
      const cfg = keysOn(config);
      if (!cfg) throw new AppError('API_KEYS_DISABLED', 'API keys are turned off on this server.');
      const now = clock();
      // No maxKeysPerUser check: the old key stops counting as the new one starts, so a user at the
      // cap can still rotate. The daily create limit does count a rotation (mint spends it).
      const { key, plaintext, recorded: retired } = await mint({ pool, counters, config, forget, swallowed }, actor, now, {
        // Unknown, foreign, revoked, expired or already rotated: all answer alike.
        ownerGone: 'API key',
        spentOn: 'created or rotated',
        async prepare({ tx }) {
          const old = await rotation.lockRotatableKey(tx, keyId, actor.userId, now);
          if (!old) throw notFound('API key');
          const expiresAt = successorExpiry(old, now, cfg.maxLifetimeDays);
          return { name: old.name, permissions: old.permissions, expiresAt, rotatedFrom: old.id };
        },
        async record({ tx, invalidate, record }, successor, { rotatedFrom: oldId }) {
          const retired = await rotation.markRotated(tx, oldId, successor.id, new Date(now.getTime() + gracePeriodSeconds * 1000));
          await record({
            audit: {
              type: 'API_KEY_ROTATED', actorUserId: actor.userId, ownerUserId: actor.userId,
              keyId: successor.id, previousKeyId: oldId, ...meta,
            },
            event: {
              type: 'key.rotated',
              data: {
                keyId: successor.id, previousKeyId: oldId, userId: actor.userId,
                name: successor.name, prefix: successor.prefix, start: successor.start,
                previousExpiresAt: retired.expires_at?.toISOString() ?? null, actor: actorOf(actor),
              },
            },
          });
          // Every instance drops its cached record of the old key, so a grace of 0 refuses it everywhere at once.
          await invalidate({ type: 'key', id: oldId });
          return retired;
        },
      });
      return { key: keyView(key, now), plaintext, previous: keyView(retired, now) };
    },
  };
}
