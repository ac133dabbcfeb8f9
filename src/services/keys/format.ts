import { randomInt } from 'node:crypto';
import { crc32 } from 'node:zlib';

// `<prefix><43 random base62 chars><6-char checksum>`: 43 × log2(62) ≈ 256 bits of entropy, and a
// CRC32 of everything before the checksum (prefix included) in base62, left-padded with 0, as
// GitHub's tokens do. A mistyped or invented key is refused without touching the database.

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_LENGTH = 43;
const CHECKSUM_LENGTH = 6;
export const START_LENGTH = 12;
/** No real key is longer; anything longer is refused before hashing. */
export const MAX_KEY_LENGTH = 16 + RANDOM_LENGTH + CHECKSUM_LENGTH;
/** What follows the prefix in every key we issue. */
export const KEY_BODY_LENGTH = RANDOM_LENGTH + CHECKSUM_LENGTH;

export function base62(n: number, width: number): string {
  let out = '';
  let v = n;
  do {
    out = ALPHABET[v % 62] + out;
    v = Math.floor(v / 62);
  } while (v > 0);
  return out.padStart(width, '0');
}

export const checksum = (body: string): string => base62(crc32(body), CHECKSUM_LENGTH);

export function generateKey(prefix: string): string {
  let random = '';
  for (let i = 0; i < RANDOM_LENGTH; i++) random += ALPHABET[randomInt(62)];
  const body = prefix + random;
  return body + checksum(body);
}

/** True when the key has the shape of one we issued and its checksum holds. */
export function hasValidChecksum(key: string): boolean {
  if (key.length < RANDOM_LENGTH + CHECKSUM_LENGTH || key.length > MAX_KEY_LENGTH) return false;
  if (!/^[A-Za-z0-9_]+$/.test(key)) return false;
  const body = key.slice(0, -CHECKSUM_LENGTH);
  return checksum(body) === key.slice(-CHECKSUM_LENGTH) && /^[0-9A-Za-z]+$/.test(key.slice(-CHECKSUM_LENGTH - RANDOM_LENGTH));
}

export const keyStart = (key: string): string => key.slice(0, START_LENGTH);
