import { createHash, randomBytes } from 'node:crypto';
import type { SecretReveal } from '../../store/webhooks.ts';

// The console's one-time view of a new or rotated signing secret. The form's POST leaves the reveal
// in the endpoint's row and redirects to an address carrying a random token; whichever instance
// serves that address shows the secret if the token's hash, the admin and the time all match.
// The secret itself never travels in an address, a cookie or a log line; only the token does, and
// it is worth nothing once used, a minute later, or to anyone but the admin who made the change.

/** How long the page after the form may take to be asked for. */
export const REVEAL_WITHIN_MS = 60_000;

/** 32 random bytes, base64url: 43 characters. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/**
 * Only the hash is stored and compared: the database's comparison of two hashes takes a time that
 * tells nothing about the token, and a read of the table gives nothing to put in an address.
 */
export const revealTokenHash = (token: string): Buffer => createHash('sha256').update(token).digest();

export function newReveal(userId: string, now: Date): { token: string; reveal: SecretReveal } {
  const token = randomBytes(32).toString('base64url');
  return { token, reveal: { tokenHash: revealTokenHash(token), userId, until: new Date(now.getTime() + REVEAL_WITHIN_MS) } };
}

/** Anything else was never issued: it is not shown, and costs no query. */
export const wellFormedRevealToken = (token: string): boolean => TOKEN.test(token);
