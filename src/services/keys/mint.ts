import type { Config } from '../../config.ts';
import type { Client, Pool } from '../../store/db.ts';
import * as keys from '../../store/apikeys.ts';
import * as users from '../../store/users.ts';
import * as orgs from '../../store/organizations.ts';
import type { CounterStore } from '../../store/quota/engine.ts';
import { secondsUntilNextUtcDay, utcDayStart } from '../../store/quota/day.ts';
import { AppError, notFound, type Swallowed } from '../../errors.ts';
import { stampedLimits, type StampedLimits } from '../plans.ts';
import { sha256 } from '../secrets.ts';
import { type Change, type Forget, withChange } from '../invalidation.ts';
import { generateKey, keyStart } from './format.ts';
import type { Permissions } from './types.ts';

// The one way a key is made, for a create and a rotation alike: under the owner's row lock, one of
// the owner's daily creates spent, the quota stamped from the plan, and only the hash stored; the
// plaintext is returned once and never kept.

const DAY_SECONDS = 86_400;
/** Creates per user per UTC day; a rotation spends one too, and so does an OAuth grant. */
export const createsCounter = (userId: string) => `creates:${userId}`;

export interface Actor { userId: string; activeOrganizationId: string | null }

/** What the new key is; the caller decides it under the owner's lock. */
export interface KeySpec {
  name: string;
  permissions: Permissions;
  expiresAt: Date | null;
  /** The key it succeeds (a rotation). */
  rotatedFrom?: string;
}

export interface MintSteps<S extends KeySpec, T> {
  /** What a missing owner answers as: a create names the user, a rotation answers like an unknown key. */
  ownerGone: string;
  /** What the daily limit's refusal says the owner did today. */
  spentOn: 'created' | 'created or rotated';
  /** Under the owner's lock, before a daily create is spent: the caller's own checks, and the key. */
  prepare(change: Change): Promise<S>;
  /** What commits with the key: its audit entry, a predecessor's retirement. */
  record(change: Change, key: keys.ApiKeyRow, spec: S): Promise<T>;
}

export interface MintDeps {
  pool: Pool;
  counters: CounterStore;
  config: Pick<Config, 'apiKeys' | 'billingScope' | 'plans' | 'defaultPlan' | 'defaultApiRateLimit' | 'defaultRateLimits'>;
  /** This instance's cache of verified keys, told after commit of what `record` invalidates. */
  forget?: Forget;
  /** Told of a give-back of a daily create that failed (see failedCreate). */
  swallowed?: Swallowed;
}

/**
 * How a create (or a rotation, or a grant) that failed ends: one that counted but did not commit
 * gives its count back; one refused for the daily limit keeps it (it is over the limit either way).
 */
export async function failedCreate(
  e: unknown, counted: { counters: CounterStore; userId: string; day: Date; swallowed?: Swallowed | undefined } | null,
): Promise<never> {
  if (counted && !(e instanceof AppError && e.code === 'API_KEY_DAILY_LIMIT')) {
    // A give-back that fails leaves the owner one create short for the day: it errs on the safe side
    // of the limit, and the caller must hear of the create's own failure, not of this one.
    await counted.counters.decrement(createsCounter(counted.userId), counted.day)
      .catch((err) => counted.swallowed?.('create-give-back', err));
  }
  throw e;
}

/** Makes a key for `actor` at `now`, in one transaction with what `steps` check and record. */
export async function mint<S extends KeySpec, T>(
  { pool, counters, config, forget, swallowed }: MintDeps, actor: Actor, now: Date, steps: MintSteps<S, T>,
): Promise<{ key: keys.ApiKeyRow; plaintext: string; recorded: T }> {
  const cfg = config.apiKeys;
  // The callers refuse first, with the API's own answer; reaching here with keys off is a bug.
  if (!cfg.enabled) throw new Error('a key was minted with API keys turned off');
  const day = utcDayStart(now);
  const plaintext = generateKey(cfg.prefix);
  let counted = false;
  try {
    return await withChange(pool, forget, async (change) => {
      const { tx } = change;
      // The owner's row lock serializes creates and rotations per user across every gateway
      // instance, so the limits are checked and spent exactly under parallel requests; it is taken
      // first, before any key's lock, so a create and a rotation never deadlock.
      if (!(await keys.lockOwner(tx, actor.userId))) throw notFound(steps.ownerGone);
      const spec = await steps.prepare(change);
      if (cfg.variant === 'A') {
        // Revoked keys stay counted and a rotation counts: revoking and recreating, or rotating in
        // a loop, cannot mint fresh quotas.
        const creates = await counters.increment(createsCounter(actor.userId), day, DAY_SECONDS + 3600);
        counted = true;
        if (creates > cfg.maxCreatesPerDay) {
          throw new AppError(
            'API_KEY_DAILY_LIMIT',
            `You have ${steps.spentOn} ${cfg.maxCreatesPerDay} keys today, the most allowed per day. Try again after midnight UTC.`,
            {},
            { retryAfterSeconds: secondsUntilNextUtcDay(now) },
          );
        }
      }
      const key = await keys.insertKey(tx, {
        userId: actor.userId, name: spec.name, keyHash: sha256(plaintext), start: keyStart(plaintext), prefix: cfg.prefix,
        permissions: spec.permissions, ...(await limitsFor(tx, actor, config)),
        expiresAt: spec.expiresAt, rotatedFrom: spec.rotatedFrom ?? null,
      });
      return { key, plaintext, recorded: await steps.record(change, key, spec) };
    });
  } catch (e) {
    return failedCreate(e, counted ? { counters, userId: actor.userId, day, swallowed } : null);
  }
}

/** The quota and windows a new key is stamped with, from the owner's plan or the active organization's. */
async function limitsFor(tx: Client, actor: Actor, config: MintDeps['config']): Promise<StampedLimits> {
  const owner = await users.findUserById(tx, actor.userId);
  const org = actor.activeOrganizationId ? await orgs.findOrganizationById(tx, actor.activeOrganizationId) : null;
  return stampedLimits(config, {
    ownerPlan: owner?.plan ?? null, activeOrganizationPlan: org?.plan ?? null, hasActiveOrganization: org !== null,
  });
}
