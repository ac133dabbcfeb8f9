import type { Config } from '../../config.ts';
import { withTransaction, type Pool } from '../../store/db.ts';
import * as store from '../../store/webhooks.ts';
import type { SecretReveal } from '../../store/webhooks.ts';
import { insertEventFor } from '../../store/outbox.ts';
import { actorColumns, insertAuditEntry, type AuditActor, type AuditDetail } from '../../store/audit.ts';
import { AppError, notFound } from '../../errors.ts';
import type { RequestMeta } from '../accounts.ts';
import type { Clock } from '../clock.ts';
import { checkEndpointUrl } from './address-guard.ts';
import { eventBody, newEventId } from './record.ts';
import { newSecret, ROTATION_OVERLAP_MS } from './signing.ts';
import { newReveal, revealTokenHash, wellFormedRevealToken } from './secret-reveal.ts';
import type { EventType } from './types.ts';

export interface EndpointView {
  id: string; url: string;
  /** null: every type. */
  events: EventType[] | null;
  description: string; enabled: boolean;
  /** Why it is disabled when keygate disabled it: `failing` (every delivery failed for days). */
  disabledReason: string | null;
  createdAt: string;
}

export interface DeliveryView {
  eventId: string; type: string; state: 'pending' | 'delivered' | 'failed'; createdAt: string;
  nextAttemptAt: string | null;
  attempts: { at: string; status: number | null; durationMs: number; error: string | null; response: string | null }[];
}

export interface EndpointInput { url: string; events?: EventType[] | null; description?: string }
export interface EndpointPatch { url?: string; events?: EventType[] | null; description?: string; enabled?: boolean }

const view = (r: store.EndpointRow): EndpointView => ({
  id: r.id, url: r.url, events: r.events as EventType[] | null, description: r.description, enabled: r.enabled,
  disabledReason: r.disabled_reason, createdAt: r.created_at.toISOString(),
});

/** Half of a UTF-16 surrogate pair, alone: no character (with the u flag a whole pair is one code point). */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/**
 * PostgreSQL text holds no NUL, and half a surrogate pair would be stored as U+FFFD, changing what
 * was sent: either is bad input, refused before anything is written.
 */
function checkDescription(description: string | undefined): void {
  const refuse = (message: string) => {
    throw new AppError('VALIDATION_FAILED', `The description ${message}.`, { errors: [{ path: 'description', message }] });
  };
  if (description?.includes('\u0000')) refuse('must not contain NUL');
  if (description !== undefined && LONE_SURROGATE.test(description)) refuse('must be well-formed Unicode');
}

/** A type named twice is wanted once: the list is kept in its first order, each type once. */
const once = (events: EventType[] | null | undefined) => (events ? [...new Set(events)] : events);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The previous secret is still honoured until `until`: a second rotation now would cut its overlap short. */
const rotationPending = (until: Date) => new AppError(
  'SECRET_ROTATION_PENDING',
  `The secret rotated out last still signs until ${until.toISOString()}; rotate again after that.`,
  { previousSecretExpiresAt: until.toISOString() },
);

export type WebhookService = ReturnType<typeof createWebhookService>;

/** A secret the console shows once: whether it came with a new endpoint or a rotation, and until when the old one signs. */
export interface RevealedSecret { url: string; secret: string; rotated: boolean; previousSecretExpiresAt: string | null }

/** Endpoints and their deliveries, for the admin API, the CLI and the console alike. */
export function createWebhookService({ pool, config, clock }: { pool: Pool; config: Pick<Config, 'webhooks'>; clock: Clock }) {
  const allowPrivate = config.webhooks.allowPrivateAddresses;
  const audited = (
    tx: Parameters<typeof insertAuditEntry>[0],
    type: 'WEBHOOK_CREATED' | 'WEBHOOK_UPDATED' | 'WEBHOOK_DELETED',
    actor: AuditActor,
    meta: RequestMeta,
    detail: AuditDetail,
  ) => insertAuditEntry(tx, { type, ...actorColumns(actor), ownerUserId: null, keyId: null, ...meta, detail });
  const found = async (id: string) => {
    const row = UUID.test(id) ? await store.findEndpoint(pool, id) : null;
    if (!row) throw notFound('webhook');
    return row;
  };

  const createEndpoint = async (actor: AuditActor, input: EndpointInput, meta: RequestMeta, reveal?: SecretReveal) => {
    const url = checkEndpointUrl(input.url, allowPrivate).href;
    checkDescription(input.description);
    const secret = newSecret();
    const row = await withTransaction(pool, async (tx) => {
      const events = once(input.events) ?? null;
      const r = await store.insertEndpoint(tx, { url, events, description: input.description ?? '', secret, reveal });
      await audited(tx, 'WEBHOOK_CREATED', actor, meta, { webhookId: r.id, url });
      return r;
    });
    return { ...view(row), secret };
  };

  const rotate = async (actor: AuditActor, id: string, meta: RequestMeta, reveal?: SecretReveal) => {
    await found(id);
    const secret = newSecret();
    const now = clock();
    const until = new Date(now.getTime() + ROTATION_OVERLAP_MS);
    const row = await withTransaction(pool, async (tx) => {
      const before = await store.findEndpoint(tx, id, true);
      if (!before) return null;
      const honoured = before.previous_secret !== null ? before.previous_secret_until : null;
      if (honoured && honoured > now) throw rotationPending(honoured);
      const r = await store.rotateSecret(tx, id, secret, until, reveal);
      if (r) await audited(tx, 'WEBHOOK_UPDATED', actor, meta, { webhookId: id, changes: ['secret'] });
      return r;
    });
    if (!row) throw notFound('webhook');
    return { secret, previousSecretExpiresAt: until.toISOString() };
  };

  return {
    /** The secret is answered this once; it is never shown again. */
    create: (actor: AuditActor, input: EndpointInput, meta: RequestMeta): Promise<EndpointView & { secret: string }> =>
      createEndpoint(actor, input, meta),

    /**
     * The console's add: the secret is not answered but left beside the endpoint for one view by
     * this admin (`takeReveal`), written in the same statement as the endpoint itself.
     */
    async createToReveal(admin: { userId: string }, input: EndpointInput, meta: RequestMeta): Promise<{ id: string; token: string }> {
      const { token, reveal } = newReveal(admin.userId, clock());
      return { id: (await createEndpoint(admin, input, meta, reveal)).id, token };
    },

    list: async (): Promise<EndpointView[]> => (await store.listEndpoints(pool)).map(view),

    get: async (id: string): Promise<EndpointView> => view(await found(id)),

    async update(actor: AuditActor, id: string, patch: EndpointPatch, meta: RequestMeta): Promise<EndpointView> {
      const url = patch.url === undefined ? undefined : checkEndpointUrl(patch.url, allowPrivate).href;
      checkDescription(patch.description);
      await found(id);
      const row = await withTransaction(pool, async (tx) => {
        const before = await store.findEndpoint(tx, id, true);
        if (!before) return null;
        const after = await store.updateEndpoint(tx, id, { ...patch, url, events: once(patch.events) });
        if (!after) return null;
        const changes: string[] = (['url', 'description', 'enabled'] as const).filter((f) => before[f] !== after[f]);
        if (JSON.stringify(before.events) !== JSON.stringify(after.events)) changes.push('events');
        if (changes.length > 0) await audited(tx, 'WEBHOOK_UPDATED', actor, meta, { webhookId: id, changes });
        return after;
      });
      if (!row) throw notFound('webhook');
      return view(row);
    },

    async remove(actor: AuditActor, id: string, meta: RequestMeta): Promise<void> {
      await found(id);
      const gone = await withTransaction(pool, async (tx) => {
        const r = await store.deleteEndpoint(tx, id);
        if (r) await audited(tx, 'WEBHOOK_DELETED', actor, meta, { webhookId: id, url: r.url });
        return r;
      });
      if (!gone) throw notFound('webhook');
    },

    /**
     * A new secret signs from now; the old one keeps signing beside it for 24 h. There is one place
     * for an old secret, so a second rotation inside those 24 h is refused (409) rather than
     * silently ending the first one's overlap: a receiver still holding that secret keeps its day.
     */
    rotateSecret: (actor: AuditActor, id: string, meta: RequestMeta): Promise<{ secret: string; previousSecretExpiresAt: string }> =>
      rotate(actor, id, meta),

    /**
     * The console's rotation: as `rotateSecret`, the new secret left for one view by this admin.
     * The reveal is written by the rotation's own statement: a rotation that commits can always be
     * seen, and one that is refused (409) leaves an earlier reveal as it was.
     */
    async rotateToReveal(admin: { userId: string }, id: string, meta: RequestMeta): Promise<{ token: string }> {
      const { token, reveal } = newReveal(admin.userId, clock());
      await rotate(admin, id, meta, reveal);
      return { token };
    },

    /**
     * The secret this token was issued for, to the admin it was issued to, within its minute, once;
     * otherwise null, and a wrong token or admin leaves the reveal for the right one.
     */
    async takeReveal(admin: { userId: string }, id: string, token: string): Promise<RevealedSecret | null> {
      if (!UUID.test(id) || !wellFormedRevealToken(token)) return null;
      const r = await store.takeSecretReveal(pool, { id, tokenHash: revealTokenHash(token), userId: admin.userId, now: clock() });
      if (!r) return null;
      const until = r.previous_secret_until?.toISOString() ?? null;
      return { url: r.url, secret: r.secret, rotated: until !== null, previousSecretExpiresAt: until };
    },

    /** Sends `webhook.test` to this endpoint alone, through the same outbox and sender as any event. */
    async test(actor: AuditActor, id: string): Promise<{ eventId: string }> {
      await found(id);
      const eventId = newEventId();
      const data = { webhookId: id, actor: actor === 'cli' ? { kind: 'cli' as const } : { kind: 'user' as const, userId: actor.userId } };
      const body = eventBody(eventId, { type: 'webhook.test', data }, clock());
      await insertEventFor(pool, id, { id: eventId, type: 'webhook.test', body });
      return { eventId };
    },

    async deliveries(id: string, limit = 50): Promise<{ deliveries: DeliveryView[] }> {
      await found(id);
      const { deliveries, attempts } = await store.listDeliveries(pool, id, limit);
      return {
        deliveries: deliveries.map((d) => ({
          eventId: d.event_id, type: d.type, state: d.state, createdAt: d.created_at.toISOString(),
          nextAttemptAt: d.state === 'pending' ? d.next_attempt_at.toISOString() : null,
          attempts: attempts.filter((a) => a.event_id === d.event_id)
            .map((a) => ({ at: a.at.toISOString(), status: a.status, durationMs: a.duration_ms, error: a.error, response: a.response })),
        })),
      };
    },

    async redeliver(id: string, eventId: string): Promise<void> {
      await found(id);
      if (!(await store.redeliver(pool, id, eventId))) throw notFound('delivery');
    },
  };
}
