import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUp } from '../../support/http.ts';
import { sweepOAuth } from '../../../src/store/oauth.ts';
import { connectApp, registerClient } from '../oauth/support.ts';

// Registration is anonymous and every authorization leaves codes, sessions and interactions
// behind: with nothing ever deleted, the store only grows. A client never authorized
// is deleted after 24 h, and expired codes, sessions and interactions are swept at least hourly.

describe('hostile: an OAuth store that is never swept', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  before(async () => (gw = await startTestGateway()));
  after(async () => gw?.stop());

  const count = async (model: string) => Number((await gw.pool.query('SELECT count(*) AS n FROM oauth_store WHERE model = $1', [model])).rows[0].n);
  const age = (model: string, hours: number) => gw.pool.query(
    `UPDATE oauth_store SET payload = jsonb_set(payload, '{client_id_issued_at}', to_jsonb(extract(epoch FROM now())::bigint - $2 * 3600)) WHERE model = $1`, [model, hours]);

  it('the sweep deletes expired rows of every model and clients unauthorized for 24 h, and keeps the rest', async () => {
    await gw.pool.query('DELETE FROM oauth_store');
    const person = await signUp(gw.url);
    const used = await connectApp(gw.url, person.client, 'Used client');
    await registerClient(gw.url, 'Never used');
    await registerClient(gw.url, 'Never used, young');
    const before = { Client: await count('Client'), Interaction: await count('Interaction'), Session: await count('Session'), AuthorizationCode: await count('AuthorizationCode') };
    expect(before.Client).to.equal(3);
    expect(before.AuthorizationCode + before.Interaction + before.Session, 'the authorization left rows behind').to.be.greaterThan(0);

    // Two clients 25 h old (one of them authorized), one fresh; codes, sessions, interactions expired.
    await age('Client', 25);
    await gw.pool.query(`UPDATE oauth_store SET payload = jsonb_set(payload, '{client_id_issued_at}', to_jsonb(extract(epoch FROM now())::bigint)) WHERE model = 'Client' AND payload->>'client_name' = 'Never used, young'`);
    await gw.pool.query(`UPDATE oauth_store SET expires_at = now() - interval '1 second' WHERE model IN ('AuthorizationCode', 'Interaction', 'Session')`);
    const swept = await sweepOAuth(gw.pool, new Date());
    expect(swept.unusedClients).to.equal(1);
    expect(swept.expired).to.be.greaterThan(0);
    for (const model of ['AuthorizationCode', 'Interaction', 'Session']) expect(await count(model), model).to.equal(0);
    const names = (await gw.pool.query(`SELECT payload->>'client_name' AS name FROM oauth_store WHERE model = 'Client' ORDER BY 1`)).rows.map((r) => r.name);
    expect(names).to.deep.equal(['Never used, young', 'Used client']);
    // What is still live stays: the connected app's tokens work after the sweep.
    expect(await count('AccessToken')).to.equal(1);
    expect(used.accessToken).to.match(/^kgo_/);
  });

  it('at a clock 24 h on, the young client goes too; rows not yet expired at that instant stay', async () => {
    await gw.pool.query(`UPDATE oauth_store SET expires_at = now() + interval '2 days' WHERE model = 'AccessToken'`);
    const swept = await sweepOAuth(gw.pool, new Date(Date.now() + 25 * 3600_000));
    expect(swept.unusedClients).to.equal(1);
    expect(await count('AccessToken')).to.equal(1);
  });

  it('the server runs the sweep on an hourly timer (and stops it at shutdown)', async () => {
    const gw2 = await startTestGateway({ database: gw.database });
    await registerClient(gw2.url, 'Swept by the timer');
    await age('Client', 30);
    expect(gw2.periodic.intervals).to.include(3600_000);
    await gw2.runPeriodic();
    expect(await count('Client')).to.equal(1);
    const running = gw2.periodic.running();
    await gw2.stop();
    expect(gw2.periodic.running(), 'the sweep timer was stopped').to.be.lessThan(running);
  });

  it('a grant whose library record expired stops counting toward maxGrantsPerUser; a fresh or live one stays', async () => {
    const person = await signUp(gw.url);
    await connectApp(gw.url, person.client, 'Expired grant');
    await connectApp(gw.url, person.client, 'Live grant');
    const live = async () => Number((await gw.pool.query('SELECT count(*) AS n FROM oauth_grants WHERE user_id = $1 AND revoked_at IS NULL', [person.user.id])).rows[0].n);
    expect(await live()).to.equal(2);
    // Both grants are two hours old; the library's record of one has expired.
    await gw.pool.query(`UPDATE oauth_grants SET created_at = now() - interval '2 hours' WHERE user_id = $1`, [person.user.id]);
    const { rows: [ended] } = await gw.pool.query(`SELECT id FROM oauth_grants WHERE client_name = 'Expired grant'`);
    await gw.pool.query(`UPDATE oauth_store SET expires_at = now() - interval '1 second' WHERE model = 'Grant' AND id_hash = sha256(convert_to($1, 'UTF8'))`, [ended.id]);
    const swept = await sweepOAuth(gw.pool, new Date());
    expect(swept.endedGrants).to.equal(1);
    expect(await live()).to.equal(1);
    const names = (await person.client.get('/api/oauth/grants')).body.grants.map((g: { clientName: string }) => g.clientName);
    expect(names).to.deep.equal(['Live grant']);
  });
});
