import { randomBytes } from 'node:crypto';
import type { Client } from '../../store/db.ts';
import { insertAuditEntry, type AuditInsert } from '../../store/audit.ts';
import { insertEvent } from '../../store/outbox.ts';
import type { EventInput } from './types.ts';

// The one place a service records "this changed": its audit entry and its event, in the caller's
// transaction (the change signal is sent there too, by withChange). A change that rolls back leaves
// neither; one that commits is audited and will be delivered whatever happens to this instance.

/** Standard Webhooks' message ids: `msg_` and random letters, the same on every attempt. */
export const newEventId = (): string => `msg_${randomBytes(16).toString('base64url')}`;

/** The body every attempt sends, byte for byte. */
export const eventBody = (id: string, e: EventInput, at: Date): string =>
  JSON.stringify({ id, type: e.type, timestamp: at.toISOString(), data: e.data });

export interface Recorded {
  audit?: AuditInsert;
  event?: EventInput;
}

/** Writes what `r` holds in `tx`; answers false when a once-only event had been said already. */
export async function recordChange(tx: Client, r: Recorded, at: Date = new Date()): Promise<boolean> {
  if (r.audit) await insertAuditEntry(tx, r.audit);
  if (!r.event) return true;
  const id = newEventId();
  return insertEvent(tx, { id, type: r.event.type, body: eventBody(id, r.event, at), onceKey: r.event.once ?? null });
}
