import { Readable } from 'node:stream';
import type { Queryable } from '../store/db.ts';
import { listAuditEntries, type AuditDetail, type AuditFilter, type AuditRow } from '../store/audit.ts';
import { AppError } from '../errors.ts';

export { AUDIT_TYPES, type AuditFilter } from '../store/audit.ts';

export interface AuditEntryView {
  id: string; type: string; actorUserId: string | null; ownerUserId: string | null; keyId: string | null; grantId: string | null;
  at: string; ip: string | null; userAgent: string | null;
  /** On API_KEY_ROTATED: the key the new one replaced. */
  previousKeyId: string | null;
  /** `cli` when the command line acted, else null (the actor is `actorUserId`). */
  actor: string | null;
  actorEmail: string | null;
  ownerEmail: string | null;
  /** On API_KEY_UPDATED: which of name, enabled, expiresAt changed. */
  changes: string[] | null;
  /** What else the kind records (a role's before and after, a policy version and its message). */
  detail: AuditDetail | null;
}

export type ExportFormat = 'csv' | 'ndjson';

export interface AuditService {
  /** The audit trail, newest first, keyset-paginated on the entry id. */
  list(opts: {
    limit: number; cursor: string | null; filter?: AuditFilter;
  }): Promise<{ entries: AuditEntryView[]; nextCursor: string | null }>;
  /** Every entry matching the filter, newest first, read a batch at a time as the stream is consumed. */
  export(format: ExportFormat, filter: AuditFilter): Readable;
}

export const auditView = (r: AuditRow): AuditEntryView => ({
  id: r.id, type: r.type, actorUserId: r.actor_user_id, ownerUserId: r.owner_user_id, keyId: r.key_id, grantId: r.grant_id,
  at: r.at.toISOString(), ip: r.ip, userAgent: r.user_agent, previousKeyId: r.previous_key_id,
  actor: r.actor, actorEmail: r.actor_email, ownerEmail: r.owner_email,
  changes: Array.isArray(r.detail?.changes) ? r.detail.changes : null,
  detail: r.detail,
});

const CSV_COLUMNS = [
  'id', 'type', 'at', 'actor', 'actorUserId', 'actorEmail', 'ownerUserId', 'ownerEmail',
  'keyId', 'grantId', 'previousKeyId', 'ip', 'userAgent', 'changes', 'detail',
] as const;

/**
 * One CSV field. A value a spreadsheet would run as a formula (a user agent is the caller's to
 * choose) is prefixed with an apostrophe, and any field with a comma, quote or line break is quoted.
 */
export function csvField(value: string | null): string {
  if (value === null) return '';
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/**
 * An entry as both export formats write it: `actor` says who acted for the person reading it,
 * `cli` or the acting person's e-mail (the list API keeps `actor` to `cli` or null beside `actorEmail`).
 */
const exportView = (r: AuditRow): AuditEntryView => {
  const e = auditView(r);
  return { ...e, actor: e.actor ?? e.actorEmail };
};

function csvRow(e: AuditEntryView): string {
  const cells: Record<(typeof CSV_COLUMNS)[number], string | null> = {
    ...e, changes: e.changes ? e.changes.join(' ') : null, detail: e.detail ? JSON.stringify(e.detail) : null,
  };
  return `${CSV_COLUMNS.map((c) => csvField(cells[c])).join(',')}\r\n`;
}

const EXPORT_BATCH = 2_000;

export function createAuditService({ pool }: { pool: Queryable }): AuditService {
  async function* lines(format: ExportFormat, filter: AuditFilter): AsyncGenerator<string> {
    if (format === 'csv') yield `${CSV_COLUMNS.join(',')}\r\n`;
    let cursor: string | null = null;
    for (;;) {
      const rows = await listAuditEntries(pool, EXPORT_BATCH, cursor, filter);
      if (rows.length === 0) return;
      // One chunk per batch: the stream's buffer holds at most a batch while the client reads.
      yield rows.map((r) => (format === 'csv' ? csvRow(exportView(r)) : `${JSON.stringify(exportView(r))}\n`)).join('');
      if (rows.length < EXPORT_BATCH) return;
      cursor = rows[rows.length - 1]!.id;
    }
  }

  return {
    async list(opts) {
      if (opts.cursor !== null && !/^[1-9][0-9]{0,18}$/.test(opts.cursor)) {
        throw new AppError('VALIDATION_FAILED', 'The cursor is not one this API returned.', {
          errors: [{ path: 'cursor', message: 'unreadable cursor' }],
        });
      }
      const rows = await listAuditEntries(pool, opts.limit + 1, opts.cursor, opts.filter);
      const page = rows.slice(0, opts.limit);
      return {
        entries: page.map(auditView),
        nextCursor: rows.length > opts.limit ? page[page.length - 1]!.id : null,
      };
    },
    export: (format, filter) => Readable.from(lines(format, filter), { objectMode: false, highWaterMark: 1 }),
  };
}
