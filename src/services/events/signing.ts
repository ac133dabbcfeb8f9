import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/** A new endpoint secret: `whsec_` and the base64 of 32 random bytes. */
export const newSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/** How long a rotated-out secret keeps signing beside the new one. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

export interface Secrets { secret: string; previous_secret: string | null; previous_secret_until: Date | null }

/**
 * The Standard Webhooks headers of one attempt: the event's id (the same on every attempt), the
 * attempt's time, and one signature per secret in force (two during a rotation's overlap, so a
 * receiver still holding the old secret keeps verifying).
 */
export function signedHeaders(eventId: string, body: string, s: Secrets, at: Date): Record<string, string> {
  const secrets = [s.secret, ...(s.previous_secret && s.previous_secret_until && s.previous_secret_until > at ? [s.previous_secret] : [])];
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((k) => new Webhook(k).sign(eventId, at, body)).join(' '),
  };
}
