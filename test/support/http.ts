import { request as httpRequest } from 'node:http';
import { record } from './openapi.ts';

export interface Reply<T = any> { status: number; headers: Record<string, string>; body: T; text: string }

/**
 * A small HTTP client with a cookie jar of its own, one per simulated user. It sends the path
 * byte for byte (fetch would normalise `..` and `%2e` away, hiding what a bypass test checks).
 */
export class Client {
  cookies = new Map<string, string>();
  constructor(readonly base: string, public headers: Record<string, string> = {}) {}

  withKey(key: string): Client {
    return new Client(this.base, { ...this.headers, 'x-api-key': key });
  }

  async request<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply<T>> {
    const url = new URL(this.base);
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const all: Record<string, string> = {
      ...(payload !== undefined ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) } : {}),
      ...(cookie ? { cookie } : {}),
      ...this.headers,
      ...headers,
    };
    return new Promise((resolve, reject) => {
      const req = httpRequest({ host: url.hostname, port: url.port, method, path, headers: all }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          for (const sc of res.headers['set-cookie'] ?? []) {
            const [pair] = sc.split(';');
            const [k, ...v] = pair!.split('=');
            const value = v.join('=');
            if (/expires=Thu, 01 Jan 1970/i.test(sc) || value === '') this.cookies.delete(k!.trim());
            else this.cookies.set(k!.trim(), value);
          }
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            // not JSON
          }
          const h: Record<string, string> = {};
          for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h[k] = Array.isArray(v) ? v.join(', ') : v;
          record({ method, path, status: res.statusCode ?? 0, contentType: h['content-type'] ?? '', body: parsed });
          resolve({ status: res.statusCode ?? 0, headers: h, body: parsed as T, text });
        });
      });
      req.on('error', reject);
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }

  get<T = any>(path: string, headers?: Record<string, string>) { return this.request<T>('GET', path, undefined, headers); }
  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>) { return this.request<T>('POST', path, body ?? {}, headers); }
  put<T = any>(path: string, body?: unknown, headers?: Record<string, string>) { return this.request<T>('PUT', path, body ?? {}, headers); }
  delete<T = any>(path: string, headers?: Record<string, string>) { return this.request<T>('DELETE', path, undefined, headers); }
}

let n = 0;
/** Signs a fresh user up and returns their client (cookie set). */
export async function signUp(base: string, overrides: { email?: string; password?: string; name?: string } = {}): Promise<{ client: Client; user: { id: string; email: string }; password: string }> {
  const client = new Client(base);
  const password = overrides.password ?? 'correct horse battery';
  const email = overrides.email ?? `user${Date.now()}${n++}@example.test`;
  const res = await client.post('/api/auth/sign-up/email', { email, password, name: overrides.name ?? 'Test User' });
  if (res.status !== 201) throw new Error(`sign-up failed: ${res.status} ${res.text}`);
  return { client, user: res.body.user, password };
}

/** A user signed up over HTTP, then made an admin in the database (no route grants the first admin). */
export async function signUpAdmin(
  gw: { url: string; pool: { query(sql: string, values: unknown[]): Promise<unknown> } },
  overrides: { email?: string; password?: string; name?: string } = {},
): Promise<Awaited<ReturnType<typeof signUp>>> {
  const s = await signUp(gw.url, overrides);
  await gw.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [s.user.id]);
  return s;
}
