import { verify } from 'node:crypto';
import { request } from 'undici';
import type { Pool } from '../../store/db.ts';
import { findKeyByHash } from '../../store/apikeys.ts';
import { hasValidChecksum, KEY_BODY_LENGTH } from '../keys/format.ts';
import { sha256 } from '../secrets.ts';
import type { Leak } from '../keys/service.ts';

// GitHub's secret scanning reports tokens in keygate's format found in public places. A report is
// believed only when signed by a key GitHub publishes; the keys are read once an hour, and again
// for an identifier not seen yet, but at most once a minute, so forged identifiers cannot make
// keygate hammer the key URL.

const KEYS_TTL_MS = 60 * 60 * 1000;
const UNKNOWN_REFRESH_MS = 60 * 1000;

export interface ReportedToken { token: string; type: string; url: string; source: string }
export interface TokenVerdict { token_raw: string; token_type: string; label: 'true_positive' | 'false_positive' }

export interface SecretScanningDeps {
  pool: Pool;
  keysUrl: string;
  /** The key prefix keygate issues (`key_`): a token without it is not ours. */
  prefix: string;
  revokeLeaked: (keyId: string, leak: Leak) => Promise<boolean>;
  nowMs?: () => number;
}

export function createSecretScanning({ pool, keysUrl, prefix, revokeLeaked, nowMs = Date.now }: SecretScanningDeps) {
  let keys = new Map<string, string>();
  let readAt = -Infinity;
  let reading: Promise<void> | null = null;

  async function readKeys(): Promise<void> {
    reading ??= (async () => {
      readAt = nowMs();
      const res = await request(keysUrl, { headers: { accept: 'application/json', 'user-agent': 'keygate' }, headersTimeout: 5000, bodyTimeout: 5000 });
      if (res.statusCode !== 200) {
        await res.body.dump();
        throw new Error(`the signing keys could not be read: ${keysUrl} answered ${res.statusCode}`);
      }
      const doc = (await res.body.json()) as { public_keys?: { key_identifier?: unknown; key?: unknown }[] };
      const next = new Map<string, string>();
      for (const k of doc.public_keys ?? []) {
        if (typeof k.key_identifier === 'string' && typeof k.key === 'string') next.set(k.key_identifier, k.key);
      }
      keys = next;
    })().finally(() => void (reading = null));
    return reading;
  }

  async function keyFor(identifier: string): Promise<string | null> {
    const age = nowMs() - readAt;
    if (age > KEYS_TTL_MS || (!keys.has(identifier) && age > UNKNOWN_REFRESH_MS)) await readKeys();
    return keys.get(identifier) ?? null;
  }

  /** Whether `signature` (base64 DER, ECDSA P-256 SHA-256) over `body` is by the key named `identifier`. */
  async function signedBy(body: string, identifier: string, signature: string): Promise<boolean> {
    const pem = await keyFor(identifier);
    if (!pem) return false;
    try {
      return verify('sha256', Buffer.from(body, 'utf8'), { key: pem, dsaEncoding: 'der' }, Buffer.from(signature, 'base64'));
    } catch {
      // A key that is not an EC public key, or a signature that is not DER: not signed by it.
      return false;
    }
  }

  /** Each token: ours (revoked now if live) or not; a token not in keygate's format costs no query. */
  async function judge(tokens: ReportedToken[]): Promise<TokenVerdict[]> {
    const out: TokenVerdict[] = [];
    for (const t of tokens) {
      const verdict = (label: TokenVerdict['label']) => out.push({ token_raw: t.token, token_type: t.type, label });
      if (!t.token.startsWith(prefix) || t.token.length !== prefix.length + KEY_BODY_LENGTH || !hasValidChecksum(t.token)) {
        verdict('false_positive');
        continue;
      }
      const row = await findKeyByHash(pool, sha256(t.token), false);
      if (!row) {
        verdict('false_positive');
        continue;
      }
      if (!row.revoked_at) await revokeLeaked(row.id, { url: t.url, source: t.source });
      verdict('true_positive');
    }
    return out;
  }

  return { signedBy, judge };
}
export type SecretScanning = ReturnType<typeof createSecretScanning>;
