import { generateKey, hasValidChecksum, KEY_BODY_LENGTH } from '../services/keys/format.ts';

// Tokens keygate issues (access, refresh, registration access) have the shape of its keys, under a
// prefix of their own: `kgo_<43 base62><6-char CRC32>`. A value can then be told apart as ours by
// looking at it: a Bearer that is not ours costs no database lookup, and one that is ours is found
// (and kept from the upstream) in whatever text it hides in. The library's own ids carry no mark.

export const TOKEN_PREFIX = 'kgo_';
export const TOKEN_LENGTH = TOKEN_PREFIX.length + KEY_BODY_LENGTH;

export const mintToken = (): string => generateKey(TOKEN_PREFIX);

/** Whether `value` has the shape and checksum of a token keygate issues. */
export const isTokenShaped = (value: string): boolean =>
  value.length === TOKEN_LENGTH && value.startsWith(TOKEN_PREFIX) && hasValidChecksum(value);

/** Whether `text` holds, anywhere, a value with our token prefix whose checksum holds. */
export function holdsToken(text: string): boolean {
  for (let at = text.indexOf(TOKEN_PREFIX); at >= 0; at = text.indexOf(TOKEN_PREFIX, at + 1)) {
    if (isTokenShaped(text.slice(at, at + TOKEN_LENGTH))) return true;
  }
  return false;
}
