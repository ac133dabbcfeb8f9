import type { Queryable } from '../store/db.ts';
import { listAuditEntries } from '../store/audit.ts';
import { AppError } from './errors.ts';

/** The audit trail, newest first, keyset-paginated on the entry id. */
export async function listAuditLog(db: Queryable, opts: { limit: number; cursor: string | null }) {
  if (opts.cursor !== null && !/^[1-9][0-9]{0,18}$/.test(opts.cursor)) {
    throw new AppError('VALIDATION_FAILED', 'The cursor is not one this API returned.', { errors: [{ path: 'cursor', message: 'unreadable cursor' }] });
  }
  const rows = await listAuditEntries(db, opts.limit + 1, opts.cursor);
  const page = rows.slice(0, opts.limit);
  return {
    entries: page.map((r) => ({ id: r.id, type: r.type, actorUserId: r.actor_user_id, ownerUserId: r.owner_user_id, keyId: r.key_id, at: r.at.toISOString(), ip: r.ip, userAgent: r.user_agent })),
    nextCursor: rows.length > opts.limit ? page[page.length - 1]!.id : null,
  };
}
