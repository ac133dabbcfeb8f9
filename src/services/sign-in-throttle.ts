import type { CounterStore } from '../store/quota/engine.ts';
import type { Clock } from './clock.ts';
import { AppError } from '../errors.ts';
import { sha256 } from './secrets.ts';

// Sign-in takes a bounded number of guesses. After 10 failed attempts for one e-mail in
// a 15-minute window, or 50 from one client address, further attempts answer 429 until the window
// passes, even with the right password (else the 429 itself would tell a guesser when they hit).
// Counted in the shared counter store, so every instance sees the same count; a store that does not
// answer fails closed (503), like every other counter.

export const SIGN_IN_WINDOW_SECONDS = 15 * 60;
export const MAX_FAILURES_PER_EMAIL = 10;
export const MAX_FAILURES_PER_ADDRESS = 50;

export interface SignInThrottle {
  /**
   * Counts this attempt before the password is checked, so parallel guesses cannot all slip in
   * under the limit; throws TOO_MANY_ATTEMPTS past it. Returns what to call once the outcome is known.
   */
  attempt(email: string, address: string | null): Promise<{ succeeded(): Promise<void> }>;
}

const windowStart = (now: Date) => new Date(Math.floor(now.getTime() / (SIGN_IN_WINDOW_SECONDS * 1000)) * SIGN_IN_WINDOW_SECONDS * 1000);

export function createSignInThrottle({ counters, clock }: { counters: CounterStore; clock: Clock }): SignInThrottle {
  return {
    async attempt(email, address) {
      const now = clock();
      const start = windowStart(now);
      // Case folded as the account lookup folds it; hashed, so the counter store holds no e-mail.
      const byEmail = `sign-in:email:${sha256(email.trim().toLowerCase()).toString('hex')}`;
      const byAddress = address ? `sign-in:address:${address}` : null;
      const [emailCount, addressCount] = await Promise.all([
        counters.increment(byEmail, start, SIGN_IN_WINDOW_SECONDS),
        byAddress ? counters.increment(byAddress, start, SIGN_IN_WINDOW_SECONDS) : Promise.resolve(0),
      ]);
      if (emailCount > MAX_FAILURES_PER_EMAIL || addressCount > MAX_FAILURES_PER_ADDRESS) {
        const retryAfterSeconds = Math.max(1, Math.ceil((start.getTime() + SIGN_IN_WINDOW_SECONDS * 1000 - now.getTime()) / 1000));
        const minutes = Math.ceil(retryAfterSeconds / 60);
        throw new AppError(
          'TOO_MANY_ATTEMPTS', `Too many failed sign-in attempts; try again in ${minutes} min.`, {}, { retryAfterSeconds },
        );
      }
      return {
        // A success clears the e-mail's failures and takes its own count back from the address:
        // a shared address (an office, a NAT) is limited on failures, not on people signing in.
        async succeeded() {
          await Promise.all([counters.reset(byEmail, start), byAddress ? counters.decrement(byAddress, start) : Promise.resolve()]);
        },
      };
    },
  };
}
