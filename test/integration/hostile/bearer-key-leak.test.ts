import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { TRACE } from '../../support/echo.ts';
import { forwardedAuthorization, head, RawSocket, startHostile, type Hostile } from './support.ts';

// A keygate key sent as `Authorization: Bearer` is the caller's secret: it never
// reaches the upstream, on any route. An attacker who runs (or reads the logs of) the upstream
// would otherwise collect keys from clients that put them in the header every SDK fills in.

const forwarded = forwardedAuthorization;

describe('hostile: a keygate key in Authorization never reaches the upstream', () => {
  describe('when the key follows "Bearer" with more text after it, or is Basic credentials', () => {
    let h: Hostile;
    before(async () => (h = await startHostile()));
    after(async () => h?.stop());

    for (const spelling of [(k: string) => `Bearer ${k}, Basic Zm9vOmJhcg==`, (k: string) => `Bearer ${k} extra`, (k: string) => `Bearer ${k},`, (k: string) => `Basic ${Buffer.from(`${k}:`).toString('base64')}`]) {
      it(`then "${spelling('<key>').slice(0, 40)}" is not forwarded`, async () => {
        const { status, sent } = await forwarded(h, spelling(h.key));
        expect(status).to.equal(200);
        expect(sent, 'the upstream received the key').to.equal(undefined);
      });
    }

    it('then an Authorization that holds no keygate key is forwarded untouched', async () => {
      const { sent } = await forwarded(h, 'Bearer not-ours, Basic Zm9vOmJhcg==');
      expect(sent).to.equal('Bearer not-ours, Basic Zm9vOmJhcg==');
    });
  });

  describe('when the MCP server (and so OAuth) is switched off', () => {
    let h: Hostile;
    before(async () => (h = await startHostile({ config: { mcpServer: { enabled: false } } })));
    after(async () => h?.stop());

    it('then "Bearer <key>" is still kept from the upstream', async () => {
      const { status, sent } = await forwarded(h, `Bearer ${h.key}`);
      expect(status).to.equal(200);
      expect(sent, 'the upstream received the key').to.equal(undefined);
    });
  });

  describe('when the key rides along on the shared-secret content route', () => {
    let h: Hostile;
    before(async () => (h = await startHostile({ gateway: { env: { CONTENT_API_KEY: 'content-s3cret' } } })));
    after(async () => h?.stop());

    it('then "Bearer <key>" on /v1/content is not forwarded either', async () => {
      const id = randomUUID();
      const s = await RawSocket.open(h.gw.url);
      s.write(head('GET', '/v1/content/page', [['Host', h.host], ['X-Content-Api-Key', 'content-s3cret'], ['Authorization', `Bearer ${h.key}`], [TRACE, id], ['Connection', 'close']]));
      const res = await s.response(10_000);
      s.destroy();
      expect(res.status).to.equal(200);
      expect(h.echo.received(id)[0]?.headers.authorization, 'the upstream received the key').to.equal(undefined);
    });
  });
});
