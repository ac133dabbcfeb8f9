import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { startTestGateway, type TestGateway, type TestGatewayOptions } from '../../support/gateway.ts';
import { Client, signUp, type Reply } from '../../support/http.ts';
import { startEcho, TRACE, type Echo, type Seen } from '../../support/echo.ts';

// Shared by the matrix tests: a real echo upstream, a gateway with one of every caller, and the
// assertions for "forwarded as this caller" and "refused, and the upstream never heard of it".

export { startEcho, TRACE, type Echo, type Seen };

export type CallerName = 'session' | 'admin' | 'key' | 'ai' | 'mcp' | 'ai+mcp' | 'anonymous';
export const CALLERS: readonly CallerName[] = ['session', 'admin', 'key', 'ai', 'mcp', 'ai+mcp', 'anonymous'];

export const describeCaller: Record<CallerName, string> = {
  session: 'a signed-in session',
  admin: 'an admin session',
  key: 'an unscoped key',
  ai: 'an ai key',
  mcp: 'an mcp key',
  'ai+mcp': 'an ai+mcp key',
  anonymous: 'an anonymous caller',
};

/** Who a caller is, as the upstream must be told. */
export interface Identity {
  userId: string | null;
  subject: 'session' | 'key' | null;
  keyId: string | null;
  permissions: string | null;
  /** A key id this caller's user owns: for the auth layer's `api-key/get`. */
  ownKeyId: string | null;
}

export interface Party {
  name: CallerName;
  identity: Identity;
  /** A fresh client per request: a sign-in or sign-up answered to it cannot change the caller. */
  client(): Client;
}

export interface MatrixGateway {
  gw: TestGateway;
  echo: Echo;
  variant: 'A' | 'B';
  parties: Record<CallerName, Party>;
  /** The credentials of the user who holds the session and the four keys. */
  owner: { email: string; password: string };
  stop(): Promise<void>;
}

const cookieClient = (base: string, token: string) => () => {
  const c = new Client(base);
  c.cookies.set('keygate_session', token);
  return c;
};

/** Generous quota: the matrix sends each key far more requests than the default 100 a day. */
export const roomyPlans = { defaultPlan: 'free', plans: { free: { apiRateLimit: 100_000 } } };

/**
 * A gateway in front of a fresh echo upstream, with one user holding a session and four keys
 * (none, ai, mcp, ai+mcp) and an admin with a session and a key of their own.
 *
 * Variant B creates keys with `{ name }` only; the ai/mcp keys there are keys whose permissions
 * were stored under Variant A (the operator switched variants): B must ignore them.
 */
export async function startMatrixGateway(variant: 'A' | 'B', opts: Omit<TestGatewayOptions, 'config'> & { config?: Record<string, unknown> } = {}): Promise<MatrixGateway> {
  const echo = await startEcho();
  const gw = await startTestGateway({
    ...opts,
    config: {
      upstream: { url: echo.url },
      ai: { enabled: true },
      apiKeys: variant === 'A' ? { enabled: true, variant: 'A' } : { enabled: true, variant: 'B' },
      ...roomyPlans,
      ...opts.config,
    },
  });
  const owner = await signUp(gw.url, { name: 'Matrix Owner' });
  const adminUser = await signUp(gw.url, { name: 'Matrix Admin' });
  await gw.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [adminUser.user.id]);
  const ownerToken = owner.client.cookies.get('keygate_session')!;
  const adminToken = adminUser.client.cookies.get('keygate_session')!;

  const makeKey = async (name: string, scopes: ('ai' | 'mcp')[]) => {
    const body = variant === 'A' ? { name, ...(scopes.includes('ai') ? { ai: true } : {}), ...(scopes.includes('mcp') ? { mcp: true } : {}) } : { name };
    const res = await owner.client.post('/api/api-keys', body);
    if (res.status !== 201) throw new Error(`key create failed: ${res.status} ${res.text}`);
    if (variant === 'B' && scopes.length) {
      const permissions = Object.fromEntries(scopes.map((s) => [s, ['access']]));
      await gw.pool.query('UPDATE apikeys SET permissions = $2 WHERE id = $1', [res.body.id, JSON.stringify(permissions)]);
    }
    return { key: res.body.key as string, id: res.body.id as string };
  };
  const plain = await makeKey('plain', []);
  const ai = await makeKey('ai', ['ai']);
  const mcp = await makeKey('mcp', ['mcp']);
  const both = await makeKey('ai+mcp', ['ai', 'mcp']);
  const adminKey = await adminUser.client.post('/api/api-keys', { name: 'admin own' });
  if (adminKey.status !== 201) throw new Error(`admin key create failed: ${adminKey.status} ${adminKey.text}`);

  const sessionOf = (userId: string, token: string, ownKeyId: string, name: CallerName): Party => ({
    name,
    identity: { userId, subject: 'session', keyId: null, permissions: null, ownKeyId },
    client: cookieClient(gw.url, token),
  });
  const keyOf = (k: { key: string; id: string }, permissions: string, name: CallerName): Party => ({
    name,
    identity: { userId: owner.user.id, subject: 'key', keyId: k.id, permissions, ownKeyId: plain.id },
    client: () => new Client(gw.url).withKey(k.key),
  });
  const parties: Record<CallerName, Party> = {
    session: sessionOf(owner.user.id, ownerToken, plain.id, 'session'),
    admin: sessionOf(adminUser.user.id, adminToken, adminKey.body.id as string, 'admin'),
    key: keyOf(plain, '', 'key'),
    ai: keyOf(ai, 'ai', 'ai'),
    mcp: keyOf(mcp, 'mcp', 'mcp'),
    'ai+mcp': keyOf(both, 'ai,mcp', 'ai+mcp'),
    anonymous: { name: 'anonymous', identity: { userId: null, subject: null, keyId: null, permissions: null, ownKeyId: null }, client: () => new Client(gw.url) },
  };
  return {
    gw,
    echo,
    variant,
    parties,
    owner: { email: owner.user.email, password: owner.password },
    async stop() {
      await gw.stop();
      await echo.close();
    },
  };
}

/** Sends one request tagged with a trace id; answers the reply and what the upstream received of it. */
export async function traced(echo: Echo, client: Client, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ res: Reply; upstream: Seen[] }> {
  const id = randomUUID();
  const res = await client.request(method, path, body, { ...headers, [TRACE]: id });
  return { res, upstream: echo.received(id) };
}

const show = (res: Reply) => `${res.status} ${res.text.slice(0, 300)}`;

export function expectProblem(res: Reply, status: number, code: string): void {
  expect(res.status, show(res)).to.equal(status);
  expect(res.headers['content-type'], show(res)).to.match(/^application\/problem\+json/);
  expect(res.body, show(res)).to.include({ status, code });
  expect(res.body.detail, show(res)).to.be.a('string').that.is.not.empty;
}


/** The upstream received exactly this request, from this caller, and its answer came back. */
export function expectForwarded(res: Reply, upstream: Seen[], sent: { method: string; path: string; query?: Record<string, string>; body?: unknown }, who: Identity): void {
  expect(res.status, show(res)).to.equal(200);
  // The upstream's answer came back whole: it echoes what it received.
  expect(res.body, show(res)).to.deep.include({ method: sent.method, path: sent.path });
  expect(upstream, 'the upstream should receive the request exactly once').to.have.length(1);
  const got = upstream[0]!;
  expect(got.method).to.equal(sent.method);
  expect(got.path).to.equal(sent.path);
  expect(got.query).to.deep.equal(sent.query ?? {});
  expect(got.body).to.deep.equal(sent.body);
  expect(got.headers['x-keygate-user-id']).to.equal(who.userId ?? undefined);
  expect(got.headers['x-keygate-subject']).to.equal(who.subject ?? undefined);
  expect(got.headers['x-keygate-key-id']).to.equal(who.keyId ?? undefined);
  expect(got.headers['x-keygate-permissions']).to.equal(who.permissions ?? undefined);
  expect(got.headers['x-api-key']).to.equal(undefined);
  expect(got.headers.cookie ?? '').to.not.match(/keygate_session=/);
}

export function expectNotForwarded(upstream: Seen[]): void {
  expect(upstream, 'a refused request must never reach the upstream').to.have.length(0);
}
