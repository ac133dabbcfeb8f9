import { expect } from 'chai';
import pg from 'pg';
import { Redis } from 'ioredis';
import { utcDayStart } from '../../src/store/quota/day.ts';
import type { TestDatabase } from '../support/db.ts';
import { REDIS_URL, requireRedis } from '../support/redis.ts';
import { expectBooksBalance, expectNoHangNoError, recoveredAfter, refused503, served, startScenario, type Scenario } from './scenario.ts';
import { Client } from '../support/http.ts';
import { ANSWER_BOUND_MS, FaultPostgres, RECOVERY_BOUND_MS, summary } from './support.ts';

// Outage behaviour with PostgreSQL killed (SIGKILL to every process of the cluster, as a crash) under
// traffic and started again: it runs crash recovery, and the gateway must come back by itself.
// Degraded mode meanwhile: a key already in this instance's cache keeps working and is counted
// in Redis; what needs the database (sessions, creates, revokes) answers 503.

const ok = { key: [200], create: [201], session: [200], revoke: [200, 204] };

describe('faults: PostgreSQL', function () {
  this.timeout(180_000);
  let postgres: FaultPostgres;
  let s: Scenario;
  before(async function () {
    if (!FaultPostgres.available()) {
      this.test!.title += ' (skipped: no PostgreSQL binaries under /usr/lib/postgresql)';
      this.skip();
    }
    await requireRedis(this);
    postgres = await FaultPostgres.start();
    const url = new URL(postgres.url);
    url.pathname = '/keygate';
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    await admin.query('CREATE DATABASE keygate');
    await admin.end();
    // The cluster is the test's own: dropping the database is the cluster's stop.
    const database: TestDatabase = { url: url.toString(), name: 'keygate', drop: async () => {} };
    s = await startScenario({ database, counters: 'redis' });
  });
  after(async () => {
    await s?.drive.stop();
    await s?.stop().catch(() => {});
    await postgres?.stop();
  });

  describe('when it is killed mid-traffic and started again', () => {
    it('then cached keys keep working, the rest is 503 within 2 s, service is back within 5 s, and the books balance', async () => {
      const { drive } = s;
      // Made but never used: this instance has no cache entry for it.
      const uncached = new Client(s.gw.url).withKey((await s.session.post('/api/api-keys', { name: 'unused' })).body.key as string);
      await drive.untilAnswers(20, 0);
      await postgres.kill();
      const down = drive.now();
      await drive.untilAnswers(20, down + 200);
      const whileDown = drive.answers.filter((a) => a.at >= down + 200);
      expect(whileDown.filter((a) => a.kind === 'key').map((a) => a.status), `cached key while PostgreSQL is down (${summary(whileDown)})`).to.include(200);
      expect(whileDown.filter((a) => a.kind === 'session').map((a) => a.status), 'sessions need the database').to.include(503);
      expect(whileDown.filter((a) => a.kind === 'create').map((a) => a.status), 'creates need the database').to.include(503);
      const started = performance.now();
      const notCached = await uncached.get('/api/projects');
      expect(notCached.status, 'a key not in the cache needs the database').to.equal(503);
      expect(notCached.body.code).to.equal('SERVICE_UNAVAILABLE');
      expect(performance.now() - started).to.be.at.most(ANSWER_BOUND_MS);

      await postgres.start();
      const back = drive.now();
      await drive.untilAnswers(30, back);
      await drive.untilServed('key', 10, back);
      // Back means the database's own routes too, not only the cached key.
      const firstSession = drive.answers.filter((a) => a.kind === 'session' && a.at >= back && a.status === 200).sort((a, b) => a.at - b.at)[0];
      expect(firstSession, `a session request after PostgreSQL returned (${summary(drive.answers.filter((a) => a.at >= back))})`).to.not.equal(undefined);
      expect(firstSession!.at + firstSession!.ms - back).to.be.at.most(RECOVERY_BOUND_MS);
      await drive.stop();
      expect(recoveredAfter(drive.answers, back)).to.be.at.most(RECOVERY_BOUND_MS);
      expectNoHangNoError(drive.answers, ok);
      const { rows } = await expectBooksBalance(s.gw.database.url, s.userId, drive.answers);

      // Counters live in Redis, which stayed up: every key request served was counted exactly once,
      // and every create that was refused gave its count back.
      const day = utcDayStart(new Date()).getTime() / 1000;
      const redis = new Redis(REDIS_URL);
      try {
        expect(Number(await redis.get(`keygate:quota:${s.keyId}:${day}`))).to.equal(served(drive.answers, 'key') + 1);
        const creates = Number(await redis.get(`keygate:creates:${s.userId}:${day}`));
        // Beside the rows of the drive: the traffic key and the unused one. A create whose COMMIT
        // reply was lost in the crash would be a row answered 503: none here, as expectBooksBalance
        // found each row answered 201.
        expect(creates, `daily creates vs rows (${refused503(drive.answers, 'create')} creates refused)`).to.equal(rows + 2);
      } finally {
        redis.disconnect();
      }
    });
  });
});
