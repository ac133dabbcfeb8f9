import { generateKeyPair, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import type { Pool } from '../store/db.ts';
import { ensureSecrets, findSecrets, type OAuthSecretsRow } from '../store/oauth.ts';

// Secrets every instance must share, kept in one PostgreSQL row and made by whichever instance
// needs them first: what one instance signs, another must be able to check.

const makeKeyPair = promisify(generateKeyPair);

/**
 * Fresh secrets, offered for the row when there is none yet (the first offer wins). The RSA key
 * pair is made off the event loop: an instance making it still answers other requests meanwhile.
 */
export async function candidateSharedSecrets(): Promise<OAuthSecretsRow> {
  const { privateKey } = await makeKeyPair('rsa', { modulusLength: 2048 });
  return {
    cookie_key: randomBytes(32).toString('base64url'),
    jwk: { ...privateKey.export({ format: 'jwk' }), kid: randomBytes(8).toString('hex'), use: 'sig', alg: 'RS256' },
  };
}

/** The shared row; its candidate (an RSA key pair, slow to make) is made only when the row is missing. */
export async function sharedSecrets(pool: Pool): Promise<OAuthSecretsRow> {
  return (await findSecrets(pool)) ?? ensureSecrets(pool, await candidateSharedSecrets());
}
