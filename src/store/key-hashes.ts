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

const read = async (db: Queryable, where: string, values: unknown[]): Promise<HashPrefixes> => {
  const { rows } = await db.query<{ ps: Buffer | null; t: Date }>(
    `SELECT statement_timestamp() AS t,
            (SELECT string_agg(substring(key_hash FROM 1 FOR ${HASH_PREFIX_BYTES}), ''::bytea) FROM apikeys ${where}) AS ps`, values);
  return { prefixes: rows[0]!.ps ?? Buffer.alloc(0), readAt: rows[0]!.t };
};

/** Every stored key's hash prefix, revoked ones included (they are then looked up and refused). */
export const readAllHashPrefixes = (db: Queryable) => read(db, '', []);

/** Hash prefixes of keys created at or after `since`, by the created_at index. */
export const readHashPrefixesSince = (db: Queryable, since: Date) => read(db, 'WHERE created_at >= $1', [since]);
