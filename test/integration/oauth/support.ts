import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Page } from 'playwright-core';
import { Client, type Reply } from '../../support/http.ts';

/**
 * The MCP client's side of the flow, in memory, as a desktop client keeps it: what it registered,
 * its PKCE verifier and its tokens. `redirectToAuthorization` only records the URL; the test opens
 * it in Chromium, where the person signs in and consents.
 */
export class MemoryAuthProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | null = null;
  constructor(readonly redirect: string, readonly name = 'Test MCP client') {}
  get redirectUrl() { return this.redirect; }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: this.name, redirect_uris: [this.redirect], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  clientInformation() { return this.info; }
  saveClientInformation(info: OAuthClientInformationMixed) { this.info = info; }
  tokens() { return this.saved; }
  saveTokens(tokens: OAuthTokens) { this.saved = tokens; }
  redirectToAuthorization(url: URL) { this.authorizationUrl = url; }
  saveCodeVerifier(v: string) { this.verifier = v; }
  codeVerifier() { return this.verifier; }
}

/** The client's loopback redirect target: records each query it is sent. */
export interface Callback { url: string; hits: URLSearchParams[]; close(): Promise<void> }

export async function startCallback(): Promise<Callback> {
  const hits: URLSearchParams[] = [];
  const server: Server = createServer((req, res) => {
    // Only the redirect itself: the browser also asks this origin for /favicon.ico.
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/callback') hits.push(url.searchParams);
    res.writeHead(200, { 'content-type': 'text/plain' }).end('You can close this window.');
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/callback`, hits, close: () => new Promise((ok) => server.close(() => ok())) };
}

/** Signs in on the real sign-in page (the consent step sent the browser there). */
export async function signInOnPage(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel('E-mail').first().fill(email);
  await page.getByLabel('Password').first().fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

const REDIRECT = 'http://127.0.0.1:9/callback';

/** Registers a public client named `clientName`; answers the registration's body. */
export async function registerClient(base: string, clientName: string, redirectUris = [REDIRECT]): Promise<{ clientId: string; registrationAccessToken: string }> {
  const registered = await new Client(base).post('/oauth/register', { client_name: clientName, redirect_uris: redirectUris, token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] });
  if (registered.status !== 201) throw new Error(`registration: ${registered.status} ${registered.text}`);
  return { clientId: registered.body.client_id as string, registrationAccessToken: registered.body.registration_access_token as string };
}

/** The browser's side: authorizes `clientId` with the person's session and allows on the consent step. */
export async function authorizeCode(base: string, session: Client, clientId: string): Promise<{ code: string; verifier: string }> {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const browser = new Client(base);
  browser.cookies = new Map(session.cookies);
  const q = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, scope: 'mcp', code_challenge: challenge, code_challenge_method: 'S256', resource: `${base}/api/mcp` });
  let res = await browser.get(`/oauth/authorize?${q}`);
  let code: string | null = null;
  for (let hop = 0; hop < 6 && !code && res.status >= 300 && res.status < 400; hop++) {
    const to = new URL(res.headers.location!, base);
    if (to.origin !== base) code = to.searchParams.get('code');
    else if (/\/oauth\/consent\/[^/]+$/.test(to.pathname)) res = await browser.request('POST', `${to.pathname}/allow`, undefined, { origin: base });
    else res = await browser.get(to.pathname + to.search);
  }
  if (!code) throw new Error(`no authorization code: ${res.status} ${res.text.slice(0, 300)}`);
  return { code, verifier };
}

/** POSTs a form to the token endpoint. */
export const tokenRequest = (base: string, form: Record<string, string>) =>
  new Client(base).request('POST', '/oauth/token', new URLSearchParams(form).toString(), { 'content-type': 'application/x-www-form-urlencoded' });

export const codeForm = (base: string, clientId: string, code: string, verifier: string) =>
  ({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: clientId, code_verifier: verifier, resource: `${base}/api/mcp` });

export interface ConnectedApp { clientId: string; accessToken: string; refreshToken: string; registrationAccessToken: string }

/**
 * A connected app made the short way, over plain HTTP: registers a public client named
 * `clientName`, authorizes it with the person's session cookie, allows on the consent step and
 * swaps the code for tokens. flow.test.ts drives the same steps with the SDK and Chromium.
 */
export async function connectApp(base: string, session: Client, clientName: string): Promise<ConnectedApp> {
  const { clientId, registrationAccessToken } = await registerClient(base, clientName);
  const { code, verifier } = await authorizeCode(base, session, clientId);
  const token = await tokenRequest(base, codeForm(base, clientId, code, verifier));
  if (token.status !== 200) throw new Error(`token: ${token.status} ${token.text}`);
  return { clientId, accessToken: token.body.access_token as string, refreshToken: token.body.refresh_token as string, registrationAccessToken };
}

/**
 * Registers a client named `clientName` and walks its authorization to the consent step with the
 * person's session; answers what the person's Allow got (a redirect with a code, or a refusal page).
 */
export async function allowNewClient(base: string, session: Client, clientName: string): Promise<Reply> {
  const { clientId } = await registerClient(base, clientName);
  const browser = new Client(base);
  browser.cookies = new Map(session.cookies);
  const q = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: 'http://127.0.0.1:9/callback', scope: 'mcp', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256', resource: `${base}/api/mcp` });
  let res = await browser.get(`/oauth/authorize?${q}`);
  for (let i = 0; i < 6 && res.status >= 300 && res.status < 400; i++) {
    const to = new URL(res.headers.location!, base);
    if (/\/oauth\/consent\/[^/]+$/.test(to.pathname)) return browser.request('POST', `${to.pathname}/allow`, undefined, { origin: base });
    res = await browser.get(to.pathname + to.search);
  }
  throw new Error(`no consent step: ${res.status} ${res.text.slice(0, 200)}`);
}
