import type { Adapter, AdapterPayload } from 'oidc-provider';
import type { Pool } from '../store/db.ts';
import * as store from '../store/oauth.ts';

// oidc-provider's storage over PostgreSQL, so every instance sees the same registrations, codes
// and tokens, and they survive a restart. The id a row is found by is the secret a client presents
// (a token, a code); it is hashed on the way in and put back into the payload on the way out, so
// the table never holds it.

/**
 * The payload member that repeats the id, per model. A provider session keeps its id: the library
 * finds it by uid and needs the id back, and it opens nothing alone, since every authorization
 * asks for a keygate session and a fresh consent (provider.ts, loadExistingGrant).
 */
const idMember = (model: string): 'client_id' | 'jti' | null => (model === 'Client' ? 'client_id' : model === 'Session' ? null : 'jti');

export interface AdapterHooks {
  /** The library dropped a grant: refresh-token reuse, revocation at /oauth/revoke, expiry. */
  onGrantDestroyed(grantId: string): Promise<void>;
}

export function createAdapterClass(pool: Pool, hooks: AdapterHooks): new (model: string) => Adapter {
  return class PostgresAdapter implements Adapter {
    constructor(readonly model: string) {}

    async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
      const member = idMember(this.model);
      const rest: Record<string, unknown> = { ...payload };
      if (member) delete rest[member];
      const grantId = this.model === 'Grant' ? id : typeof payload.grantId === 'string' ? payload.grantId : null;
      await store.upsertStored(pool, {
        model: this.model,
        id,
        uid: typeof payload.uid === 'string' ? payload.uid : null,
        grantId,
        payload: rest,
        expiresAt: typeof expiresIn === 'number' ? new Date(Date.now() + expiresIn * 1000) : null,
      });
    }

    async find(id: string): Promise<AdapterPayload | undefined> {
      const row = await store.findStored(pool, this.model, id);
      return row ? this.revive(row, id) : undefined;
    }

    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      const row = await store.findStoredByUid(pool, this.model, uid);
      return row ? this.revive(row, undefined) : undefined;
    }

    async findByUserCode(): Promise<undefined> {
      // The device flow is not enabled; nothing is ever stored by user code.
      return undefined;
    }

    async consume(id: string): Promise<void> {
      await store.consumeStored(pool, this.model, id);
    }

    async destroy(id: string): Promise<void> {
      await store.destroyStored(pool, this.model, id);
      if (this.model === 'Grant') {
        await store.destroyByGrant(pool, id);
        await hooks.onGrantDestroyed(id);
      }
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await store.destroyByGrant(pool, grantId, this.model);
    }

    private revive(row: store.StoredRow, id: string | undefined): AdapterPayload {
      const payload: Record<string, unknown> = { ...row.payload };
      const member = idMember(this.model);
      if (member && id !== undefined) payload[member] = id;
      if (row.consumed_at) payload.consumed = Math.floor(row.consumed_at.getTime() / 1000);
      return payload as AdapterPayload;
    }
  };
}
