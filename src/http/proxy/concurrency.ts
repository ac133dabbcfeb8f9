import { AppError } from '../../errors.ts';
import type { Caller } from '../state.ts';

/** Frees the slot; calling it again does nothing. */
export type Release = () => void;

export interface CallerSlots {
  /** Takes one of the caller's slots, or throws TOO_MANY_CONCURRENT when all are held. */
  take(caller: Caller): Release;
  /** Slots held now, by every caller. */
  held(): number;
}

// Who a slot belongs to. A key is its own caller (a user's keys do not share one budget, as they do
// not share a quota); a signed-in user is one caller across sessions.
function holderOf(caller: Caller): string | null {
  if (caller.kind === 'key') return `key:${caller.key.id}`;
  if (caller.kind === 'grant') return `grant:${caller.grant.id}`;
  if (caller.kind === 'session') return `user:${caller.user.id}`;
  return null;
}

/**
 * Bounds the forwards one caller holds at once in this process, so one caller cannot take every
 * upstream connection from everyone else. Anonymous requests have no caller to count against.
 */
export function callerSlots(max: number): CallerSlots {
  const inUse = new Map<string, number>();
  let total = 0;
  return {
    take(caller) {
      const holder = holderOf(caller);
      if (holder === null) return () => {};
      const now = inUse.get(holder) ?? 0;
      if (now >= max) {
        const detail = `This caller already has ${max} requests in progress; wait for one to finish.`;
        throw new AppError('TOO_MANY_CONCURRENT', detail, {}, { retryAfterSeconds: 1 });
      }
      inUse.set(holder, now + 1);
      total++;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        total--;
        const left = (inUse.get(holder) ?? 1) - 1;
        if (left > 0) inUse.set(holder, left);
        else inUse.delete(holder);
      };
    },
    held: () => total,
  };
}
