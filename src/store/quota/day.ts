// The UTC day, the window of request quotas and daily creates. Epoch milliseconds count no leap
// seconds, so every UTC day is exactly DAY_MS long and its start is a remainder away.

const DAY_MS = 86_400_000;

/**
 * How long a day's counter is kept: the day and an hour more, so an instance whose clock is a little
 * behind still reads the day it is counting in.
 */
export const DAY_TTL_SECONDS = 86_400 + 3600;

/** The start of the UTC day of `ms`, in ms: a number, so the hot path compares without a Date. */
export const utcDayStartMs = (ms: number): number => ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS);

/** The start of the UTC day of `now`: a Date of the caller's own, so no caller can move another's day. */
export const utcDayStart = (now: Date): Date => new Date(utcDayStartMs(now.getTime()));

export function secondsUntilNextUtcDay(now: Date): number {
  const t = now.getTime();
  return Math.max(1, Math.ceil((utcDayStartMs(t) + DAY_MS - t) / 1000));
}
