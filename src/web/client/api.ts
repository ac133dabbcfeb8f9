// The page's only way to the API: same-origin fetch with the session cookie, and every failure
// turned into a problem value, so callers handle outcomes rather than exceptions.

export interface FieldError { path: string; message: string }

export interface Problem {
  status: number;
  /** The API's stable code; NETWORK when no answer came at all. */
  code: string;
  detail: string;
  errors: FieldError[];
}

export type Result<T> = { ok: true; status: number; data: T } | { ok: false; problem: Problem };

function asProblem(status: number, body: unknown): Problem {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Partial<Problem>;
  return {
    status,
    code: typeof b.code === 'string' ? b.code : `HTTP_${status}`,
    detail: typeof b.detail === 'string' ? b.detail : '',
    errors: Array.isArray(b.errors)
      ? b.errors.filter((e): e is FieldError => typeof e?.path === 'string' && typeof e?.message === 'string')
      : [],
  };
}

export function createApi(prefix: string) {
  async function call<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<Result<T>> {
    let res: Response;
    try {
      res = await fetch(prefix + path, {
        method,
        credentials: 'same-origin',
        cache: 'no-store',
        headers: { accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch {
      return { ok: false, problem: { status: 0, code: 'NETWORK', detail: '', errors: [] } };
    }
    const text = await res.text().catch(() => '');
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // a proxy's HTML error page, say: the status still tells what happened
    }
    return res.ok ? { ok: true, status: res.status, data: parsed as T } : { ok: false, problem: asProblem(res.status, parsed) };
  }
  return {
    get: <T>(path: string) => call<T>('GET', path),
    post: <T>(path: string, body: unknown = {}) => call<T>('POST', path, body),
    delete: <T>(path: string) => call<T>('DELETE', path),
  };
}

export type Api = ReturnType<typeof createApi>;

export const networkSentence = 'The server did not answer. Check your connection, then try again.';
