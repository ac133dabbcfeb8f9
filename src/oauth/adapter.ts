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
  /** The library's refusal for a code or refresh token already spent (answered `invalid_grant`). */
  alreadyUsed(what: string): Error;
}

export function createAdapterClass(pool: Pool, hooks: AdapterHooks): new (model: string) => Adapter {
  const dropGrant = async (grantId: string) => {
    await store.destroyStored(pool, 'Grant', grantId);
    await store.destroyByGrant(pool, grantId);
    await hooks.onGrantDestroyed(grantId);
  };
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

    /**
     * The library reads `consumed` when it finds a code or refresh token, then consumes it: two
     * uses at once would both find it unspent. The UPDATE is the one that decides: only the use
     * whose UPDATE marks the row goes on; any other is a reuse, and as the library does for a
     * reuse it sees, the grant is revoked with every token made from it (RFC 9700 4.14.2).
     */
    async consume(id: string): Promise<void> {
      const spent = await store.consumeStored(pool, this.model, id);
      if (spent.consumed) return;
      if (spent.grantId) await dropGrant(spent.grantId);
      throw hooks.alreadyUsed(this.model === 'AuthorizationCode' ? 'authorization code already used' : 'refresh token already used');
    }

    async destroy(id: string): Promise<void> {
      if (this.model === 'Grant') await dropGrant(id);
      else await store.destroyStored(pool, this.model, id);
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
