import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { connectApp, type ConnectedApp } from '../oauth/support.ts';
import { forwardedAuthorization as forwarded, startHostile, type Hostile } from './support.ts';

// A keygate key or token wrapped in an encoding is still that key or token: the upstream (or
// whoever reads its logs) undoes the wrapping and holds the credential. The screen recognised
// plain text and one layer of base64; `Bearer kgo%5F…`, hex, base64 inside base64 and an
// upper-case prefix went through.

const b64 = (s: string) => Buffer.from(s, 'latin1').toString('base64');
const hex = (s: string) => Buffer.from(s, 'latin1').toString('hex');
const percentAll = (s: string) => [...s].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');
const underscore = (s: string, by: string) => s.replace('_', by);

const disguises: [string, (secret: string) => string][] = [
  ['Bearer with the underscore percent-encoded, upper-case hex', (t) => `Bearer ${underscore(t, '%5F')}`],
  ['Bearer with the underscore percent-encoded, lower-case hex', (t) => `Bearer ${underscore(t, '%5f')}`],
  ['Bearer with every character percent-encoded', (t) => `Bearer ${percentAll(t)}`],
  ['Bearer percent-encoded twice', (t) => `Bearer ${underscore(t, '%255F')}`],
  ['Bearer as hex', (t) => `Bearer ${hex(t)}`],
  ['Bearer as upper-case hex', (t) => `Bearer ${hex(t).toUpperCase()}`],
  ['Bearer as hex behind one more hex digit', (t) => `Bearer f${hex(t)}`],
  ['Basic holding base64 of "u:" and the secret, base64 again', (t) => `Basic ${b64(b64(`u:${t}`))}`],
  ['Bearer as base64 of hex', (t) => `Bearer ${b64(hex(t))}`],
  ['Bearer as hex of base64', (t) => `Bearer ${hex(b64(t))}`],
  ['Bearer as base64 of a percent-encoding', (t) => `Bearer ${b64(underscore(t, '%5F'))}`],
  ['Bearer with the prefix in upper case', (t) => `Bearer ${t.slice(0, 4).toUpperCase()}${t.slice(4)}`],
  ['Bearer with a JSON escape for the underscore', (t) => `Bearer ${underscore(t, '\\u005f')}`],
  ['a custom scheme with base64 behind letters that are not', (t) => `Token x${b64(`:${t}`)}`],
];

describe('hostile: a keygate key or token wrapped in an encoding never reaches the upstream', function () {
  this.timeout(60_000);
  let h: Hostile;
  let app: ConnectedApp;
  before(async () => {
    h = await startHostile();
    app = await connectApp(h.gw.url, h.session, 'Wrapping client');
  });
  after(async () => h?.stop());

  for (const [what, secret] of [['an access token', () => app.accessToken], ['a key', () => h.key]] as const) {
    for (const [name, spell] of disguises) {
      it(`${what} as ${name} is not forwarded`, async () => {
        const { status, sent } = await forwarded(h, spell(secret()));
        expect(status).to.equal(200);
        expect(sent, 'the upstream received the wrapped credential').to.equal(undefined);
      });
    }
  }

  it('forwards other Authorization values untouched: a JWT, long hex, long base64, percent-encoding, and a near miss', async () => {
    const jwt = ['{"alg":"RS256","typ":"JWT"}', '{"sub":"1234567890","name":"Someone","iat":1516239022,"aud":"https://api.example"}']
      .map((p) => Buffer.from(p).toString('base64url')).join('.') + `.${randomBytes(256).toString('base64url')}`;
    const nearMiss = app.accessToken.slice(0, -1) + (app.accessToken.endsWith('A') ? 'B' : 'A');
    for (const value of [`Bearer ${jwt}`, `Bearer ${randomBytes(128).toString('hex')}`, `Basic ${randomBytes(600).toString('base64')}`,
      'Bearer a%20b%5Fc', `Bearer ${hex(nearMiss)}`, `Basic ${b64(b64(`u:${nearMiss}`))}`]) {
      const { sent } = await forwarded(h, value);
      expect(sent, value.slice(0, 60)).to.equal(value);
    }
  });
});
