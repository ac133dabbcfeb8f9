import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client } from '../../support/http.ts';

// Spoofed redirect hosts: the consent page names where the answer goes so a person can spot an
// impostor, and a URL parser forgives spellings that read as one host and go to another. A
// Cyrillic `а` (a homograph of trusted.example), `%2e` for a dot, and a trusted name written as
// user info before the real host are refused at registration.

describe('hostile: redirect URIs whose host is not written plainly', function () {
  this.timeout(30_000);
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
  });
  after(async () => gw?.stop());

  const register = (uri: string) => new Client(gw.url).post('/oauth/register', { client_name: 'Spoof', redirect_uris: [uri], token_endpoint_auth_method: 'none' });

  it('refuses homographs, percent-encoded dots, user info and other spellings the parser rewrites', async () => {
    for (const uri of [
      'https://trusted-b\u0430nk.example/cb', 'https://evil%2eexample/cb', 'https://trusted-bank.example@evil.example/cb',
      'https://user:pass@evil.example/cb', 'http://127.0.0.1@evil.example/cb', 'https://EVIL%2Eexample/cb', 'https://127.1/cb', 'https:evil.example/cb',
      'http://localhost%2eevil.example/cb',
    ]) {
      const res = await register(uri);
      expect(res.status, uri).to.equal(400);
      expect(res.body.error, uri).to.match(/invalid_redirect_uri|invalid_client_metadata/);
    }
  });

  it('takes hosts written plainly, punycode included (it reads as what it is)', async () => {
    for (const uri of ['https://trusted-bank.example/cb', 'https://Trusted-Bank.example:8443/cb', 'https://xn--trusted-bnk-8ij.example/cb', 'http://127.0.0.1:7/cb', 'http://[::1]:7/cb']) {
      const res = await register(uri);
      expect(res.status, `${uri}: ${res.text.slice(0, 200)}`).to.equal(201);
    }
  });
});
