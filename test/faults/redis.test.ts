import { expect } from 'chai';
import { utcDayStart } from '../../src/store/quota/day.ts';
import { expectBooksBalance, expectNoHangNoError, recoveredAfter, refused503, served, startScenario, type Scenario } from './scenario.ts';
import { FaultRedis, RECOVERY_BOUND_MS, holdDown, summary } from './support.ts';

// Outage behaviour with the counters' Redis broken under traffic. Every answer is a success or a 503
// within 2 s, service resumes within 5 s of Redis answering again with no restart, and the books
// balance.
//
// The counting bound: the quota counter holds every request answered other than 503, once, plus
// at most one for each key request answered 503 — an INCR that Redis applied but whose reply was
// lost (a kill after the write, a freeze past the command timeout) cannot be told from one never
// applied. The daily create counter has the same bound against the key rows. This Redis writes
// its append-only file on every command, so what it acknowledged survives the kill; without
// persistence a restart forgets the day's counts (docs/scale-out.md).

const ok = { key: [200], create: [201], session: [200], revoke: [200, 204] };

async function expectCountedOnce(s: Scenario, redis: FaultRedis): Promise<void> {
  const answers = s.drive.answers;
  const day = utcDayStart(new Date()).getTime() / 1000;
  // The key's one request before the drive is counted too.
  const quota = await redis.get(`keygate:quota:${s.keyId}:${day}`);
  const keyServed = served(answers, 'key') + 1;
  expect(quota, `quota count vs key requests answered (${summary(answers)})`).to.be.within(keyServed, keyServed + refused503(answers, 'key'));
  const { rows } = await expectBooksBalance(s.gw.database.url, s.userId, answers);
  const creates = await redis.get(`keygate:creates:${s.userId}:${day}`);
  // The first key, made before the drive, was counted as a create too.
  expect(creates, 'daily create count vs keys made').to.be.within(rows + 1, rows + 1 + refused503(answers, 'create'));
}

describe('faults: the counters\' Redis', function () {
  this.timeout(120_000);
  let redis: FaultRedis;
  let s: Scenario;
  beforeEach(async () => {
    redis = await FaultRedis.start();
    s = await startScenario({ counters: 'redis', redisUrl: redis.url });
  });
  afterEach(async () => {
    await s?.drive.stop();
    await s?.stop();
    await redis?.kill();
  });

  describe('when Redis is killed mid-traffic and started again', () => {
    it('then every answer is a success or a 503 within 2 s, service is back within 5 s, and every request served was counted once', async () => {
      const { drive } = s;
      await drive.untilAnswers(20, 0);
      await redis.kill();
      const down = drive.now();
      await drive.untilAnswers(15, down + 100);
      const whileDown = drive.answers.filter((a) => a.at >= down + 100);
      expect(whileDown.filter((a) => a.kind === 'key').map((a) => a.status), 'key requests while Redis is down').to.include(503);
      // Sessions and liveness do not need Redis: the key list is readable with usage unknown.
      expect(whileDown.filter((a) => a.kind === 'session').map((a) => a.status)).to.not.include(503);
      // A create spends the daily create counter, so it fails closed; a revoke needs only PostgreSQL.
      expect(whileDown.filter((a) => a.kind === 'create').map((a) => a.status), 'creates while Redis is down').to.include(503);
      expect(whileDown.filter((a) => a.kind === 'revoke').map((a) => a.status), 'revokes while Redis is down').to.not.include(503);
      // Sign-in counts its attempts in the same counters before it checks a password: it fails closed.
      const signIn = await fetch(`${s.gw.url}/api/auth/sign-in/email`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'nobody@example.test', password: 'not the password' }) });
      expect(signIn.status, 'a sign-in attempt while Redis is down').to.equal(503);

      await redis.start();
      const back = drive.now();
      await drive.untilAnswers(30, back);
      await drive.untilServed('key', 10, back);
      await drive.stop();
      expect(recoveredAfter(drive.answers, back)).to.be.at.most(RECOVERY_BOUND_MS);
      expect(drive.answers.filter((a) => a.at >= back + RECOVERY_BOUND_MS && a.status === 503), 'a 503 after recovery').to.deep.equal([]);
      expectNoHangNoError(drive.answers, ok);
      await expectCountedOnce(s, redis);
    });
  });

  describe('when Redis is frozen (SIGSTOP) for 5 s', () => {
    it('then nothing hangs past 2 s, service is back within 5 s of it thawing, and every request served was counted once', async () => {
      const { drive } = s;
      await drive.untilAnswers(20, 0);
      const frozen = drive.now();
      await holdDown(5_000, { hold: () => redis.signal('SIGSTOP'), release: () => redis.signal('SIGCONT') });
      const thawed = drive.now();
      const during = drive.answers.filter((a) => a.at >= frozen + 100 && a.at < thawed - 1_500);
      expect(during.filter((a) => a.kind === 'key').map((a) => a.status), 'key requests while Redis is frozen').to.include(503);
      await drive.untilAnswers(30, thawed);
      await drive.untilServed('key', 10, thawed);
      await drive.stop();
      expect(recoveredAfter(drive.answers, thawed)).to.be.at.most(RECOVERY_BOUND_MS);
      expectNoHangNoError(drive.answers, ok);
      await expectCountedOnce(s, redis);
    });
  });
});
