import type { Queryable } from './db.ts';

// The first bytes of stored key hashes, for an in-memory filter of keys that may exist. Never the
// whole hash: the filter only has to tell "surely not stored" from "maybe stored".

export const HASH_PREFIX_BYTES = 6;

export interface HashPrefixes {
  /** The prefixes end to end, HASH_PREFIX_BYTES each: one buffer, not one object per key. */
  prefixes: Buffer;
  /** The database's time when the read began: the next read of new keys starts a margin before it. */
  readAt: Date;
}

/** `column`: the hash read; `from`: the table and the rows read. */
const read = async (db: Queryable, column: string, from: string, values: unknown[]): Promise<HashPrefixes> => {
  const { rows } = await db.query<{ ps: Buffer | null; t: Date }>(
    `SELECT statement_timestamp() AS t,
            (SELECT string_agg(substring(${column} FROM 1 FOR ${HASH_PREFIX_BYTES}), ''::bytea) FROM ${from}) AS ps`, values);
  return { prefixes: rows[0]!.ps ?? Buffer.alloc(0), readAt: rows[0]!.t };
};

/** Every stored key's hash prefix, revoked ones included (they are then looked up and refused). */
export const readAllHashPrefixes = (db: Queryable) => read(db, 'key_hash', 'apikeys', []);

/** Hash prefixes of keys created at or after `since`, by the created_at index. */
export const readHashPrefixesSince = (db: Queryable, since: Date) => read(db, 'key_hash', 'apikeys WHERE created_at >= $1', [since]);

// OAuth access tokens are stored by the SHA-256 of the token, as keys by theirs, in the OAuth store.
const TOKENS = "oauth_store WHERE model = 'AccessToken' AND expires_at > now()";

/** Every live access token's hash prefix. */
export const readAllTokenHashPrefixes = (db: Queryable) => read(db, 'id_hash', TOKENS, []);

/**
 * Hash prefixes of access tokens issued at or after `since`. Their rows carry no creation time:
 * a token issued then expires at least `lifetimeMs` after it (by the expiry index).
 */
export const readTokenHashPrefixesSince = (db: Queryable, since: Date, lifetimeMs: number) =>
  read(db, 'id_hash', `${TOKENS} AND expires_at >= $1`, [new Date(since.getTime() + lifetimeMs)]);
