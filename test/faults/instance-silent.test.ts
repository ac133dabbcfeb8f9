import { expect } from 'chai';
import { createTestDatabase, serverUrl, type TestDatabase } from '../support/db.ts';
import { startTestGateway, testClock, type TestGateway } from '../support/gateway.ts';
import { signUpAdmin } from '../support/http.ts';
import { policyCli } from '../integration/policy/support.ts';
import { startFreezableProxy, type FreezableProxy } from './freeze-proxy.ts';

// An instance whose database connection freezes stops reporting: what it enforces is unknown (it
// may go on serving the version it had). It stays listed, silent, with its last report and a
// reason, in the fleet API and `policy status`, which does not call the fleet converged (exit 1).
// An instance that stops on purpose leaves the list.

interface Listed { instanceId: string; lagging: boolean; silent: boolean; lagReason: string | null; policyVersion: number }

describe('faults: an instance that stops reporting', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let proxy: FreezableProxy;
  let a: TestGateway;
  let b: TestGateway;
  const clock = testClock();
  before(async () => {
    db = await createTestDatabase('kg_silent');
    const server = new URL(await serverUrl());
    proxy = await startFreezableProxy(server.hostname, Number(server.port || 5432));
    a = await startTestGateway({ database: db, clock, heartbeatMs: 3_600_000 });
    b = await startTestGateway({ database: { url: proxy.urlFor(db.url), name: db.name, drop: async () => {} }, clock, heartbeatMs: 3_600_000 });
  });
  after(async () => {
    proxy?.thaw();
    await b?.stop();
    await a?.stop();
    await proxy?.stop();
    await db?.drop();
  });

  it('stays listed as silent and lagging, with its last version, and status exits 1', async () => {
    const admin = await signUpAdmin(a);
    await a.policy.heartbeat.beat();
    await b.policy.heartbeat.beat();
    proxy.freeze();
    // A minute on: the frozen instance's beat does not reach the database; the other one's does.
    clock.advance(60_000);
    await a.policy.heartbeat.beat();
    await b.policy.heartbeat.beat().catch(() => {});

    const fleet = (await admin.client.get('/api/admin/fleet')).body as { lagging: number; instances: Listed[] };
    const silent = fleet.instances.find((i) => i.instanceId === b.policy.heartbeat.instanceId);
    expect(silent, 'the frozen instance is still listed').to.not.equal(undefined);
    expect(silent).to.include({ silent: true, lagging: true, policyVersion: b.policy.service.loaded.version });
    expect(silent!.lagReason).to.match(/^silent since /);
    const awake = fleet.instances.find((i) => i.instanceId === a.policy.heartbeat.instanceId)!;
    expect(awake).to.include({ silent: false, lagging: false, lagReason: null });
    expect(fleet.lagging).to.equal(1);

    const status = await policyCli(a.pool, a.config, ['status'], clock.now);
    expect(status.code, 'policy status while one is silent').to.equal(1);
    expect(status.out).to.match(/LAGGING: silent since/);

    proxy.thaw();
    await b.stop();
    const after = (await admin.client.get('/api/admin/fleet')).body as { instances: Listed[] };
    expect(after.instances.map((i) => i.instanceId), 'an instance stopped on purpose leaves the list').to.deep.equal([a.policy.heartbeat.instanceId]);
  });
});
