import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { Pool } from '../store/db.ts';
import { ensureSecrets, findSecrets, type OAuthSecretsRow } from '../store/oauth.ts';

// Secrets every instance must share, kept in one PostgreSQL row and made by whichever instance
// needs them first: what one instance signs, another must be able to check.

/** Fresh secrets, offered for the row when there is none yet (the first offer wins). */
export function candidateSharedSecrets(): OAuthSecretsRow {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { cookie_key: randomBytes(32).toString('base64url'), jwk: { ...privateKey.export({ format: 'jwk' }), kid: randomBytes(8).toString('hex'), use: 'sig', alg: 'RS256' } };
}

/** The shared row; its candidate (an RSA key pair, slow to make) is made only when the row is missing. */
export async function sharedSecrets(pool: Pool): Promise<OAuthSecretsRow> {
  return (await findSecrets(pool)) ?? ensureSecrets(pool, candidateSharedSecrets());
}
