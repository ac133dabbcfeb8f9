import { AppError } from '../errors.ts';

// Keyset pagination: a cursor names the last row a page showed by its creation time and id, so the
// next page starts after it whatever was inserted meanwhile. Opaque to clients (base64url).

/** The cursor after `row`: its created_at as PostgreSQL printed it (microseconds kept) and its id. */
export const encodeCursor = (row: { created_cursor: string; id: string }): string =>
  Buffer.from(`${row.created_cursor}|${row.id}`).toString('base64url');

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// created_at as PostgreSQL prints a timestamptz (ISO style), microseconds kept.
const TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?[+-]\d{2}(:\d{2})?$/;

/** A cursor this API made, read back; anything else is a 400 that names the cursor. */
export function decodeCursor(cursor: string): { createdAt: string; id: string } {
  const [createdAt, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (!createdAt || !id || !UUID.test(id) || !TIMESTAMP.test(createdAt)) {
    throw new AppError('VALIDATION_FAILED', 'The cursor is not one this API returned.', {
      errors: [{ path: 'cursor', message: 'unreadable cursor' }],
    });
  }
  return { createdAt, id };
}
