import { createHash, randomBytes } from 'node:crypto';
import { Client } from '../../support/http.ts';

export const REDIRECT = 'http://127.0.0.1:9/callback';

export interface Authorized {
  /** The client's redirect, when the flow reached it (a code or an error), else null. */
  redirect: URL | null;
  /** The consent page's HTML, when one was shown. */
  consent: string | null;
  /** The last answer seen when the flow stopped at the gateway. */
  status: number;
  text: string;
  verifier: string;
}

/**
 * The browser's side over plain HTTP with the person's session: the authorization request with
 * `params` (a value of null leaves that parameter out), then Allow on the consent step.
 */
export async function authorizeWith(base: string, session: Client, clientId: string, params: Record<string, string | null> = {}): Promise<Authorized> {
  const verifier = randomBytes(32).toString('base64url');
  const q = new URLSearchParams({
    client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, scope: 'mcp',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256', resource: `${base}/api/mcp`,
  });
  for (const [k, v] of Object.entries(params)) if (v === null) q.delete(k); else q.set(k, v);
  const browser = new Client(base);
  browser.cookies = new Map(session.cookies);
  let res = await browser.get(`/oauth/authorize?${q}`);
  let consent: string | null = null;
  for (let hop = 0; hop < 6 && res.status >= 300 && res.status < 400; hop++) {
    const to = new URL(res.headers.location!, base);
    if (to.origin !== base) return { redirect: to, consent, status: res.status, text: res.text, verifier };
    if (/\/oauth\/consent\/[^/]+$/.test(to.pathname)) {
      consent = (await browser.get(to.pathname)).text;
      res = await browser.request('POST', `${to.pathname}/allow`, undefined, { origin: base });
    } else res = await browser.get(to.pathname + to.search);
  }
  return { redirect: null, consent, status: res.status, text: res.text, verifier };
}

export const tokenFor = (base: string, clientId: string, code: string, verifier: string) =>
  new Client(base).request('POST', '/oauth/token', new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: clientId, code_verifier: verifier, resource: `${base}/api/mcp` }).toString(), { 'content-type': 'application/x-www-form-urlencoded' });
