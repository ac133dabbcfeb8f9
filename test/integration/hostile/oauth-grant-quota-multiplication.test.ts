import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { allowNewClient } from '../oauth/support.ts';

// Each grant carries a daily request quota of its own. With no cap on consents, a person holding
// `maxKeysPerUser` keys could connect ten, a hundred apps and multiply their throughput. Now
// a consent counts toward `maxCreatesPerDay` like a key create, and live grants toward
// `oauth.maxGrantsPerUser`; past either, the consent page answers 400 GRANT_LIMIT in words, and
// the client gets no code.

const consent = (base: string, session: Client) => allowNewClient(base, session, 'Quota multiplier');

describe('hostile: many OAuth consents multiply one person\'s daily quota', function () {
  this.timeout(120_000);

  describe('variant A: grants count toward maxCreatesPerDay, beside key creates', () => {
    let gw: TestGateway;
    before(async () => (gw = await startTestGateway({ config: { apiKeys: { maxKeysPerUser: 3, maxCreatesPerDay: 4 } } })));
    after(async () => gw?.stop());

    it('two keys and two grants spend the day; the next consent is refused on a page, and so is the next key', async () => {
      const person = await signUp(gw.url);
      for (const name of ['a', 'b']) expect((await person.client.post('/api/api-keys', { name })).status).to.equal(201);
      for (let i = 0; i < 2; i++) expect((await consent(gw.url, person.client)).status, `consent ${i}`).to.equal(303);
      const refused = await consent(gw.url, person.client);
      expect(refused.status, refused.text).to.equal(400);
      expect(refused.headers.location).to.equal(undefined);
      expect(refused.text).to.contain('GRANT_LIMIT');
      expect(refused.text).to.match(/4 keys and apps today/);
      expect((await person.client.post('/api/api-keys', { name: 'c' })).status).to.equal(429);
      const { grants } = (await person.client.get('/api/oauth/grants')).body as { grants: unknown[] };
      expect(grants).to.have.length(2);
    });
  });

  for (const apiKeys of [{ variant: 'A', maxCreatesPerDay: 100 }, { variant: 'B' }]) {
    describe(`variant ${apiKeys.variant}: live grants are capped by oauth.maxGrantsPerUser`, () => {
      let gw: TestGateway;
      before(async () => (gw = await startTestGateway({ config: { apiKeys, oauth: { maxGrantsPerUser: 3 } } })));
      after(async () => gw?.stop());

      it('the fourth consent gets a readable 400 GRANT_LIMIT page and no code; revoking one makes room', async () => {
        const person = await signUp(gw.url);
        for (let i = 0; i < 3; i++) expect((await consent(gw.url, person.client)).status, `consent ${i}`).to.equal(303);

        // The refusal itself: an HTML page in words, not a redirect to the client.
        const allow = await consent(gw.url, person.client);
        expect(allow.status).to.equal(400);
        expect(allow.headers.location).to.equal(undefined);
        expect(allow.headers['content-type']).to.match(/^text\/html/);
        expect(allow.text).to.contain('GRANT_LIMIT');
        expect(allow.text).to.match(/already have 3 connected apps/);

        const { grants } = (await person.client.get('/api/oauth/grants')).body as { grants: { id: string }[] };
        expect(grants).to.have.length(3);
        expect((await person.client.request('DELETE', `/api/oauth/grants/${grants[0]!.id}`)).status).to.equal(204);
        expect((await consent(gw.url, person.client)).status).to.equal(303);
      });
    });
  }
});
