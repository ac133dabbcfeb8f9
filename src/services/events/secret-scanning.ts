import { createPublicKey, type KeyObject, verify } from 'node:crypto';
import { request } from 'undici';
import { AppError } from '../../errors.ts';
import type { Pool } from '../../store/db.ts';
import { findKeysByHashes } from '../../store/apikeys.ts';
import { hasValidChecksum, KEY_BODY_LENGTH } from '../keys/format.ts';
import { sha256 } from '../secrets.ts';
import type { Leak } from '../keys/service.ts';

// GitHub's secret scanning reports tokens in keygate's format found in public places. A report is
// believed only when signed by a key GitHub publishes; the keys are read once an hour, and again
// for an identifier not seen yet, but at most once a minute, so forged identifiers cannot make
// keygate hammer the key URL.

const KEYS_TTL_MS = 60 * 60 * 1000;
const UNKNOWN_REFRESH_MS = 60 * 1000;
/** The whole read of the keys, however its answer is paced (a wait between bytes alone has no end). */
export const KEYS_READ_DEADLINE_MS = 10_000;
/** The most of the key document read (GitHub's is under 2 KB). */
export const KEYS_DOCUMENT_MAX_BYTES = 64 * 1024;

/**
 * A published key, if it is what the reports are signed with: an ECDSA P-256 public key. Any other
 * (RSA, another curve, not a key) is left out, so no other algorithm is ever accepted.
 */
function p256(pem: string): KeyObject | null {
  try {
    const key = createPublicKey(pem);
    return key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1' ? key : null;
  } catch {
    return null;
  }
}

export interface ReportedToken { token: string; type: string; url: string; source: string }
export interface TokenVerdict { token_raw: string; token_type: string; label: 'true_positive' | 'false_positive' }

export interface SecretScanningDeps {
  pool: Pool;
  keysUrl: string;
  /** The key prefix keygate issues (`key_`): a token without it is not ours. */
  prefix: string;
  /** Revokes the keys named (id → where each was found) in one change. */
  revokeLeaked: (leaks: ReadonlyMap<string, Leak>) => Promise<unknown>;
  nowMs?: () => number;
}

/**
 * The leak's location as stored and announced: PostgreSQL text and jsonb hold no NUL, jsonb no half
 * of a surrogate pair (JSON may escape one, `\ud800`), and a report carrying either must still
 * revoke its key, so each becomes U+FFFD.
 */
const storable = (text: string): string =>
  text.replace(/\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');

export function createSecretScanning({ pool, keysUrl, prefix, revokeLeaked, nowMs = Date.now }: SecretScanningDeps) {
  let keys = new Map<string, KeyObject>();
  let readAt = -Infinity;
  let reading: Promise<void> | null = null;

  async function readKeys(): Promise<void> {
    reading ??= (async () => {
      readAt = nowMs();
      const res = await request(keysUrl, {
        headers: { accept: 'application/json', 'user-agent': 'keygate' }, headersTimeout: 5000, bodyTimeout: 5000,
        signal: AbortSignal.timeout(KEYS_READ_DEADLINE_MS),
      });
      if (res.statusCode !== 200) {
        await res.body.dump();
        throw new Error(`the signing keys could not be read: ${keysUrl} answered ${res.statusCode}`);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        size += chunk.length;
        // GitHub's document is a few keys, under 2 KB: a larger one is not read into memory whole.
        if (size > KEYS_DOCUMENT_MAX_BYTES) {
          res.body.destroy();
          throw new Error(`the signing keys could not be read: ${keysUrl} answered more than ${KEYS_DOCUMENT_MAX_BYTES} bytes`);
        }
        chunks.push(chunk);
      }
      const doc = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { public_keys?: { key_identifier?: unknown; key?: unknown }[] };
      const next = new Map<string, KeyObject>();
      for (const k of doc.public_keys ?? []) {
        if (typeof k.key_identifier !== 'string' || typeof k.key !== 'string') continue;
        const key = p256(k.key);
        if (key) next.set(k.key_identifier, key);
      }
      keys = next;
    })().finally(() => void (reading = null));
    return reading;
  }

  async function keyFor(identifier: string): Promise<KeyObject | null> {
    const age = nowMs() - readAt;
    const stale = age > KEYS_TTL_MS || (!keys.has(identifier) && age > UNKNOWN_REFRESH_MS);
    // A report for a key not known yet that arrives while the keys are being read (reports come in
    // bursts, the first one starting the read) waits for that read rather than being refused;
    // readKeys answers the read in flight when there is one.
    if (stale || (reading && !keys.has(identifier))) {
      // Keys read before keep serving while the URL is away.
      await readKeys().catch(() => undefined);
    }
    // With none at all (no read has worked yet, and the next may wait a minute), no report can be
    // judged either way: GitHub is told to retry, not that the report is forged.
    if (keys.size === 0) {
      throw new AppError(
        'SERVICE_UNAVAILABLE', 'The signing keys of the report could not be read; try again later.', {}, { retryAfterSeconds: 60 },
      );
    }
    return keys.get(identifier) ?? null;
  }

  /**
   * The key named `identifier`, or null when GitHub publishes none by that name: asked before the
   * body is read, so a report naming an unknown key is refused without reading it.
   */
  const signer = (identifier: string): Promise<KeyObject | null> => keyFor(identifier);

  /**
   * Whether `signature` (base64 DER, ECDSA P-256 SHA-256) over `body`, the bytes as they came (not
   * text decoded from them), is by `key`.
   */
  function signedBy(body: Buffer, key: KeyObject, signature: string): boolean {
    try {
      return verify('sha256', body, { key, dsaEncoding: 'der' }, Buffer.from(signature, 'base64'));
    } catch {
      // A signature that is not DER: not signed by it.
      return false;
    }
  }

  /**
   * Each token: ours (revoked now if live) or not, in the report's order. A token not in keygate's
   * format costs no query; the rest are looked up together, and the live ones revoked together,
   * through the key service (each audited, signalled and announced), where first named.
   */
  async function judge(tokens: ReportedToken[]): Promise<TokenVerdict[]> {
    const ours = (t: ReportedToken) =>
      t.token.startsWith(prefix) && t.token.length === prefix.length + KEY_BODY_LENGTH && hasValidChecksum(t.token);
    const hashes = new Map(tokens.filter(ours).map((t) => [t.token, sha256(t.token).toString('hex')]));
    const stored = new Map<string, { id: string; revoked_at: Date | null }>();
    if (hashes.size > 0) {
      const rows = await findKeysByHashes(pool, [...new Set(hashes.values())].map((h) => Buffer.from(h, 'hex')));
      for (const row of rows) stored.set(row.key_hash.toString('hex'), row);
    }
    const rowOf = (t: ReportedToken) => {
      const hash = hashes.get(t.token);
      return hash === undefined ? undefined : stored.get(hash);
    };
    const leaks = new Map<string, Leak>();
    for (const t of tokens) {
      const row = rowOf(t);
      if (row && !row.revoked_at && !leaks.has(row.id)) leaks.set(row.id, { url: storable(t.url), source: storable(t.source) });
    }
    if (leaks.size > 0) await revokeLeaked(leaks);
    return tokens.map((t) => ({ token_raw: t.token, token_type: t.type, label: rowOf(t) ? 'true_positive' : 'false_positive' }));
  }

  return { signer, signedBy, judge };
}
export type SecretScanning = ReturnType<typeof createSecretScanning>;
