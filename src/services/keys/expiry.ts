import { AppError } from '../../errors.ts';

// When a key stops working. Pure: the caller hands in the clock's time and the
// operator's maxLifetimeDays.

export const MIN_LIFETIME_SECONDS = 3600;
export const MAX_EXPIRES_IN_SECONDS = 31_536_000;
/** The list warns about keys that stop working within this long. */
export const EXPIRES_SOON_MS = 7 * 86_400_000;

const invalid = (path: string, message: string) =>
  new AppError('VALIDATION_FAILED', `Invalid request body: ${path} ${message}.`, { errors: [{ path, message }] });

/**
 * The operator's bound, on create and update alike: within maxLifetimeDays when set, and then
 * "never" is refused. An instant in the past is fine here: on update it expires the key now.
 */
export function lifetimeBoundedExpiry(at: Date | null, now: Date, maxLifetimeDays: number | undefined, path: string): Date | null {
  if (at === null) {
    if (maxLifetimeDays !== undefined) throw invalid(path, `must be set: keys on this server expire within ${maxLifetimeDays} days`);
    return null;
  }
  if (maxLifetimeDays !== undefined && at.getTime() > now.getTime() + maxLifetimeDays * 86_400_000) {
    throw invalid(path, `must be within ${maxLifetimeDays} days (the longest a key may live on this server)`);
  }
  return at;
}

/**
 * An expiry at creation: at least an hour ahead (a key that dies before anyone can deploy it is a
 * mistake), at most a year ahead like expiresIn (so every instant answered keeps a four-digit
 * year), and within maxLifetimeDays.
 */
export function boundedExpiry(at: Date, now: Date, maxLifetimeDays: number | undefined, path: string): Date | null {
  if (at.getTime() < now.getTime() + MIN_LIFETIME_SECONDS * 1000) throw invalid(path, 'must be at least an hour ahead');
  if (at.getTime() > now.getTime() + MAX_EXPIRES_IN_SECONDS * 1000) {
    throw invalid(path, `must be at most ${MAX_EXPIRES_IN_SECONDS} seconds (a year) ahead`);
  }
  return lifetimeBoundedExpiry(at, now, maxLifetimeDays, path);
}

export interface ExpiryChoice { expiresIn?: number; expiresAt?: string }

/** The expiry of a new key: the one asked for, else now + maxLifetimeDays, else none. */
export function expiryAtCreate(choice: ExpiryChoice, now: Date, maxLifetimeDays: number | undefined): Date | null {
  if (choice.expiresIn !== undefined && choice.expiresAt !== undefined) {
    throw invalid('expiresAt', 'cannot be sent together with expiresIn');
  }
  if (choice.expiresIn !== undefined) {
    return boundedExpiry(new Date(now.getTime() + choice.expiresIn * 1000), now, maxLifetimeDays, 'expiresIn');
  }
  if (choice.expiresAt !== undefined) return boundedExpiry(new Date(choice.expiresAt), now, maxLifetimeDays, 'expiresAt');
  return maxLifetimeDays === undefined ? null : new Date(now.getTime() + maxLifetimeDays * 86_400_000);
}

/**
 * A successor keeps its predecessor's lifetime length; a key that had none gets the operator's
 * policy. A successor is a new key, so a year at most, as at creation: an expiry moved far out by
 * the update route would otherwise be answered with a five-digit year.
 */
export function successorExpiry(
  old: { created_at: Date; expires_at: Date | null },
  now: Date,
  maxLifetimeDays: number | undefined,
): Date | null {
  if (old.expires_at) {
    const lifetime = Math.min(old.expires_at.getTime() - old.created_at.getTime(), MAX_EXPIRES_IN_SECONDS * 1000);
    const capped = maxLifetimeDays === undefined ? lifetime : Math.min(lifetime, maxLifetimeDays * 86_400_000);
    return new Date(now.getTime() + capped);
  }
  return maxLifetimeDays === undefined ? null : new Date(now.getTime() + maxLifetimeDays * 86_400_000);
}

export const expiresSoon = (expiresAt: Date | null, now: Date): boolean =>
  expiresAt !== null && expiresAt.getTime() > now.getTime() && expiresAt.getTime() - now.getTime() <= EXPIRES_SOON_MS;
