import { createHash, hash, randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

// Hashing and comparison of secrets: passwords (scrypt), session tokens and keys (SHA-256).

const SCRYPT = { N: 16384, r: 8, p: 1, keylen: 32 };

function scryptAsync(password: string, salt: Buffer, keylen: number, opts: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, keylen, opts, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

/** `scrypt$N$r$p$salt$hash`, base64url parts, so the cost can be raised later without breaking old hashes. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, SCRYPT.keylen, { N: SCRYPT.N, r: SCRYPT.r, p: SCRYPT.p });
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [kind, n, r, p, salt, hash] = stored.split('$');
  if (kind !== 'scrypt' || !n || !r || !p || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await scryptAsync(password, Buffer.from(salt, 'base64url'), expected.length, {
    N: Number(n), r: Number(r), p: Number(p), maxmem: 64 * 1024 * 1024,
  });
  return timingSafeEqual(actual, expected);
}

// A hash of a fixed password, checked when the e-mail is unknown so both paths cost the same
// and the timing does not reveal whether an account exists.
let decoy: Promise<string> | null = null;
export const decoyPasswordHash = () => (decoy ??= hashPassword('keygate-decoy-password'));

export const sha256 = (value: string): Buffer => createHash('sha256').update(value).digest();

/** The same digest in hex, in one call (no hash object): the key verifier's per-request lookup. */
export const sha256Hex = (value: string): string => hash('sha256', value, 'hex');

export const randomToken = (bytes = 32): string => randomBytes(bytes).toString('base64url');

/** Constant-time comparison of two shared secrets of any length. */
export function safeEqual(a: string, b: string): boolean {
  const ha = sha256(a);
  const hb = sha256(b);
  return timingSafeEqual(ha, hb) && a.length === b.length;
}
