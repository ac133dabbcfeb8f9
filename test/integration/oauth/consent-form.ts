import { Client } from '../../support/http.ts';

/**
 * The person's browser without a browser: follows `authorizationUrl` with the person's session,
 * reads the consent page, and posts the form its Allow button belongs to. Answers where the last
 * redirect away from the gateway pointed (the client's redirect URI with its code), or throws with
 * the page the walk stopped on.
 */
export async function allowByConsentForm(base: string, session: Client, authorizationUrl: string | URL): Promise<URL> {
  const browser = new Client(base);
  browser.cookies = new Map(session.cookies);
  const start = new URL(authorizationUrl);
  let res = await browser.get(start.pathname + start.search);
  for (let hop = 0; hop < 8; hop++) {
    if (res.status >= 300 && res.status < 400) {
      const to = new URL(res.headers.location!, base);
      if (to.origin !== new URL(base).origin) return to;
      res = await browser.get(to.pathname + to.search);
      continue;
    }
    const allow = /<form method="post" action="([^"]+)"><button type="submit" class="primary">Allow<\/button><\/form>/.exec(res.text);
    if (res.status !== 200 || !allow) break;
    res = await browser.request('POST', allow[1]!.replace(/&#(\d+);/g, (_m, n: string) => String.fromCharCode(Number(n))), undefined, { origin: base });
  }
  throw new Error(`the consent walk stopped at ${res.status}: ${res.text.slice(0, 400)}`);
}
