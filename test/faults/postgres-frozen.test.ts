import { expect } from 'chai';
import { createTestDatabase, serverUrl, type TestDatabase } from '../support/db.ts';
import { requireRedis } from '../support/redis.ts';
import { expectEntriesMatchRows, expectNoHangNoError, readBooks, refused503, startScenario, type Scenario } from './scenario.ts';
import { ANSWER_BOUND_MS, RECOVERY_BOUND_MS, holdDown, summary, type Answer } from './support.ts';
import { startFreezableProxy, type FreezableProxy } from './freeze-proxy.ts';

// A PostgreSQL that stops answering without closing its connections (a stalled network, a frozen
// VM), under traffic: every request that needs it answers 503 within 2 s instead of hanging for as
// long as the freeze lasts, and once it answers again the pools serve within 5 s, no restart.

// A revoke answered 503 because its COMMIT's reply was held back may still have committed when the
// database answered again (the lost-reply case every deadline has): retried, it finds nothing: 404.
const ok = { key: [200], create: [201], session: [200], revoke: [200, 204, 404] };
const FROZEN_MS = 4_000;

describe('faults: PostgreSQL frozen', function () {
  this.timeout(120_000);
  let db: TestDatabase;
  let proxy: FreezableProxy;
  let s: Scenario;
  before(async function () {
    await requireRedis(this);
    db = await createTestDatabase('kg_frozen');
    const server = new URL(await serverUrl());
    proxy = await startFreezableProxy(server.hostname, Number(server.port || 5432));
    s = await startScenario({ database: { url: proxy.urlFor(db.url), name: db.name, drop: async () => {} }, counters: 'redis' });
  });
  after(async () => {
    proxy?.thaw();
    await s?.drive.stop();
    await s?.stop().catch(() => {});
    await proxy?.stop();
    await db?.drop();
  });

  it('answers 503 within 2 s while it is frozen, and serves again within 5 s of it answering', async () => {
    const { drive } = s;
    await drive.untilServed('session', 3, 0);
    const frozenAt = drive.now();
    await holdDown(FROZEN_MS, { hold: () => proxy.freeze(), release: () => proxy.thaw() });
    const thawedAt = drive.now();
    await drive.untilServed('session', 3, thawedAt, 20_000);
    await drive.untilServed('create', 1, thawedAt, 20_000);
    await drive.stop();

    const during = drive.answers.filter((a) => a.at >= frozenAt + 200 && a.at + a.ms <= thawedAt);
    expect(refused503(during, 'session') + refused503(during, 'create'), `requests needing the database while frozen (${summary(during)})`).to.be.greaterThan(0);
    expectNoHangNoError(drive.answers, ok);
    const slowest = Math.max(...drive.answers.map((a) => a.ms));
    expect(slowest).to.be.at.most(ANSWER_BOUND_MS);

    const firstServed = drive.answers.filter((a) => a.kind === 'session' && a.at >= thawedAt && a.status === 200).sort((a, b) => a.at - b.at)[0]!;
    const recovery = firstServed.at + firstServed.ms - thawedAt;
    expect(recovery, 'a signed-in request served after the thaw').to.be.at.most(RECOVERY_BOUND_MS);
    await expectNothingHalfWritten(db.url, s.userId, drive.answers);
    console.log(`      frozen ${FROZEN_MS} ms: ${summary(during)}; slowest answer ${slowest} ms; served again ${recovery} ms after the thaw`);
  });
});

const count = (answers: Answer[], kind: string, status: number) => answers.filter((a) => a.kind === kind && a.status === status).length;

/**
 * Every key row has its creation entry and every revocation its entry (nothing half-written); rows
 * number the 201s (204s) plus at most the 503s whose COMMIT reached the database after the thaw.
 */
async function expectNothingHalfWritten(databaseUrl: string, userId: string, answers: Answer[]): Promise<void> {
  const b = await readBooks(databaseUrl, userId);
  expectEntriesMatchRows(b);
  expect(b.made).to.be.within(count(answers, 'create', 201), count(answers, 'create', 201) + count(answers, 'create', 503));
  expect(b.revoked).to.be.within(count(answers, 'revoke', 204), count(answers, 'revoke', 204) + count(answers, 'revoke', 503));
}
