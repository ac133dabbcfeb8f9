import { expect } from 'chai';
import { startSilenceableProxy, until, type SilenceableProxy } from '../../support/engines.ts';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { Client, signUp } from '../../support/http.ts';

// CONTRACT 16: a LISTEN connection that goes silent without closing (a NAT or pooler forgetting
// it) is noticed by the periodic check and replaced, so a revocation made elsewhere still reaches
// the instance within 10 s, not after the 60 s the key cache would otherwise keep it.

describe('a silently cut signal channel', () => {
  let database: TestDatabase;
  let proxy: SilenceableProxy;
  let listening: TestGateway;
  let other: TestGateway;

  before(async function () {
    this.timeout(60_000);
    database = await createTestDatabase();
    const direct = new URL(database.url);
    proxy = await startSilenceableProxy(direct.hostname, Number(direct.port || 5432));
    const viaProxy = new URL(database.url);
    viaProxy.host = `127.0.0.1:${proxy.port}`;
    // Only this instance's LISTEN (and migrations) go through the proxy; its requests do not.
    listening = await startTestGateway({ database, env: { DATABASE_DIRECT_URL: viaProxy.toString() } });
    other = await startTestGateway({ database });
  });
  after(async () => {
    await listening?.stop();
    await other?.stop();
    await proxy?.stop();
    await database?.drop();
  });

  it('when the channel stops passing bytes without closing, then a key revoked on another instance is refused here within 10 s, and the policy is re-read', async function () {
    this.timeout(30_000);
    const { client } = await signUp(other.url);
    const created = (await client.post('/api/api-keys', { name: 'cut' })).body;
    const key = new Client(listening.url).withKey(created.key);
    // Cached on the listening instance: from now on only a signal or a reconnect can stop it.
    expect((await key.get('/api/auth/get-session')).status).to.equal(200);

    proxy.silenceOpen();
    const revokedAt = Date.now();
    expect((await client.delete(`/api/api-keys/${created.id}`)).status).to.equal(204);
    const took = await until('the revocation reaches the instance', async () => (await key.get('/api/auth/get-session')).status === 401, 10_000, 200);
    expect(Date.now() - revokedAt).to.be.below(10_000);
    expect(took).to.be.below(10_000);
    expect(listening.logs.some((l) => l.includes('signal channel reconnected'))).to.equal(true);
    expect(listening.logs.some((l) => l.includes('policy reloaded'))).to.equal(true);
    console.log(`      (revocation reached the instance ${Date.now() - revokedAt} ms after the channel went silent)`);
  });
});
