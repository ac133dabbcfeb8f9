import type { Queryable } from '../store/db.ts';
import { listAuditEntries } from '../store/audit.ts';
import { AppError } from '../errors.ts';

export interface AuditEntryView {
  id: string; type: string; actorUserId: string | null; ownerUserId: string | null; keyId: string | null; grantId: string | null;
  at: string; ip: string | null; userAgent: string | null;
  /** On API_KEY_ROTATED: the key the new one replaced. */
  previousKeyId: string | null;
}

export interface AuditService {
  /** The audit trail, newest first, keyset-paginated on the entry id. */
  list(opts: { limit: number; cursor: string | null }): Promise<{ entries: AuditEntryView[]; nextCursor: string | null }>;
}

export function createAuditService({ pool }: { pool: Queryable }): AuditService {
  return {
    async list(opts) {
      if (opts.cursor !== null && !/^[1-9][0-9]{0,18}$/.test(opts.cursor)) {
        throw new AppError('VALIDATION_FAILED', 'The cursor is not one this API returned.', { errors: [{ path: 'cursor', message: 'unreadable cursor' }] });
      }
      const rows = await listAuditEntries(pool, opts.limit + 1, opts.cursor);
      const page = rows.slice(0, opts.limit);
      return {
        entries: page.map((r) => ({ id: r.id, type: r.type, actorUserId: r.actor_user_id, ownerUserId: r.owner_user_id, keyId: r.key_id, grantId: r.grant_id, at: r.at.toISOString(), ip: r.ip, userAgent: r.user_agent, previousKeyId: r.previous_key_id })),
        nextCursor: rows.length > opts.limit ? page[page.length - 1]!.id : null,
      };
    },
  };
}
