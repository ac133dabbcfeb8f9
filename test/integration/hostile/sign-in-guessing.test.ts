import { randomInt } from 'node:crypto';
import { expect } from 'chai';
import { startTestGateway, testClock, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { SIGN_IN_WINDOW_SECONDS } from '../../../src/services/sign-in-throttle.ts';

// Sign-in took unlimited guesses. After 10 failed attempts for one e-mail in 15 minutes,
// or 50 from one client address, further attempts answer 429 TOO_MANY_ATTEMPTS with Retry-After
// until the window passes, even with the right password; a success resets the e-mail's count.
// The gateway's clock is the test's; each case starts in a fresh window.

for (const counters of ['postgres', 'redis'] as const) {
  describe(`hostile: guessing passwords at sign-in (${counters} counters)`, function () {
    this.timeout(60_000);
    let gw: TestGateway;
    // Redis is shared by every test run on the machine and the address is always 127.0.0.1: a window
    // of its own, picked at random far ahead, keeps another run's counts out of this one.
    const clock = testClock(new Date(Date.UTC(2030, 0, 1) + randomInt(1_000_000) * SIGN_IN_WINDOW_SECONDS * 1000));
    let email: string;
    let password: string;
    before(async () => {
      gw = await startTestGateway({ clock, counters });
      ({ user: { email }, password } = await signUp(gw.url));
    });
    beforeEach(() => clock.advance(SIGN_IN_WINDOW_SECONDS * 1000));
    after(async () => gw?.stop());

    const signIn = (e: string, p: string) => new Client(gw.url).post('/api/auth/sign-in/email', { email: e, password: p });

    describe('when one e-mail has had 10 wrong passwords', () => {
      it('then the 11th attempt is 429 TOO_MANY_ATTEMPTS with Retry-After, even with the right password and in another letter case, until the window passes', async () => {
        for (let i = 0; i < 10; i++) expect((await signIn(email, `wrong ${i}`)).status).to.equal(401);
        const refused = await signIn(email, password);
        expect(refused.status, refused.text).to.equal(429);
        expect(refused.headers['content-type']).to.match(/^application\/problem\+json/);
        expect(refused.body.code).to.equal('TOO_MANY_ATTEMPTS');
        const retryAfter = Number(refused.headers['retry-after']);
        expect(retryAfter).to.be.within(1, SIGN_IN_WINDOW_SECONDS);
        expect(refused.headers['set-cookie']).to.equal(undefined);
        expect((await signIn(email.toUpperCase(), password)).status).to.equal(429);
        expect((await signIn(` ${email} `, password)).status).to.equal(429);
        clock.advance(retryAfter * 1000);
        const after = await signIn(email, password);
        expect(after.status, after.text).to.equal(200);
      });
    });

    describe('when an e-mail has 9 failures and then signs in', () => {
      it('then its count starts over: 10 more wrong passwords are each 401, the 11th is 429', async () => {
        for (let i = 0; i < 9; i++) expect((await signIn(email, `wrong ${i}`)).status).to.equal(401);
        expect((await signIn(email, password)).status).to.equal(200);
        for (let i = 0; i < 10; i++) expect((await signIn(email, `wrong again ${i}`)).status, `attempt ${i + 1}`).to.equal(401);
        expect((await signIn(email, password)).status).to.equal(429);
      });
    });

    describe('when 30 wrong passwords for one e-mail arrive at once', () => {
      it('then at most 10 are checked (401); the rest are 429', async () => {
        const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => signIn(email, `parallel ${i}`)));
        const statuses = answers.map((a) => a.status);
        expect(statuses.filter((s) => s === 401).length).to.equal(10);
        expect(statuses.filter((s) => s === 429).length).to.equal(20);
      });
    });

    describe('when one address has had 50 failed attempts, spread over many e-mails', () => {
      it('then the next attempt from it is 429, for any e-mail, the right password included', async () => {
        for (let i = 0; i < 50; i++) expect((await signIn(`stranger${i}@example.test`, 'wrong password')).status).to.equal(401);
        const res = await signIn(email, password);
        expect(res.status, res.text).to.equal(429);
        expect(res.body.code).to.equal('TOO_MANY_ATTEMPTS');
        expect(Number(res.headers['retry-after'])).to.be.within(1, SIGN_IN_WINDOW_SECONDS);
      });
    });

    describe('when people sign in successfully from one address many times', () => {
      it('then that is no failure: 60 successes in a window are all 200', async () => {
        for (let i = 0; i < 60; i++) expect((await signIn(email, password)).status, `sign-in ${i + 1}`).to.equal(200);
      });
    });
  });
}
