import type { Context } from 'koa';
import { z } from 'zod';
import { AppError, notFound, type FieldError } from '../errors.ts';

export const MAX_BODY_BYTES = 1024 * 1024;

/** Over the limit, the rest of the body is not worth reading: the connection closes after the answer. */
export const tooLarge = () => new AppError('PAYLOAD_TOO_LARGE', 'The request body is larger than 1 MiB.', {}, { closeConnection: true });

/** A body that sends nothing for this long is given up on. */
export const BODY_IDLE_MS = 10_000;

/** A duration as a person reads it in a problem's detail. */
export const duration = (ms: number) => (ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`);

/** The body never came whole: what is left of it would be read as the next request, so the connection closes. */
export const requestTimeout = (why: string) => new AppError('REQUEST_TIMEOUT', why, {}, { closeConnection: true });

/** The body's bytes as they came, refused with `overLimit()` past `maxBytes`, declared or as it arrives. */
export async function readBodyBytes(ctx: Context, maxBytes = MAX_BODY_BYTES, overLimit: () => AppError = tooLarge): Promise<Buffer> {
  if (Number(ctx.get('content-length') || 0) > maxBytes) throw overLimit();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw overLimit();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The body as text (UTF-8), refused with `overLimit()` past `maxBytes`, declared or as it arrives. */
export async function readBodyText(ctx: Context, maxBytes = MAX_BODY_BYTES, overLimit: () => AppError = tooLarge): Promise<string> {
  return (await readBodyBytes(ctx, maxBytes, overLimit)).toString('utf8');
}

/** `root` names the whole input when an issue has no path: the body, or the query. */
export function zodErrors(error: z.ZodError, root = '(body)'): FieldError[] {
  return error.issues.map((i) => {
    const path = i.path.map(String).join('.');
    if (i.code === 'unrecognized_keys') {
      const fields = i.keys.length > 1 ? 'fields' : 'field';
      return { path: path || root, message: `unknown ${fields}: ${i.keys.join(', ')}` };
    }
    return { path: path || root, message: i.message };
  });
}

function invalid(error: z.ZodError, what: string): AppError {
  const errors = zodErrors(error, what === 'query' ? '(query)' : '(body)');
  const first = errors[0];
  return new AppError('VALIDATION_FAILED', first ? `Invalid ${what}: ${first.path} ${first.message}.` : `Invalid ${what}.`, { errors });
}

/**
 * The path of the first member named "__proto__", if any. JSON.parse keeps it as an ordinary member,
 * but zod (rightly) leaves it out when it copies a record: a permission named so would vanish and
 * the create succeed with less than was asked, with no word said. No route takes such a name.
 */
interface Member { value: object; key: string; parent: Member | null }

function protoMember(root: unknown): string | null {
  if (root === null || typeof root !== 'object') return null;
  // A stack, not recursion, and each entry points at its parent instead of holding its whole path:
  // a 1 MiB body nests deeper than the call stack goes.
  const todo: Member[] = [{ value: root, key: '', parent: null }];
  for (let at = todo.pop(); at; at = todo.pop()) {
    if (!Array.isArray(at.value) && Object.hasOwn(at.value, '__proto__')) {
      const path = ['__proto__'];
      for (let m: Member | null = at; m?.parent; m = m.parent) path.unshift(m.key);
      // The path names the place, not every level of a body nested on purpose.
      return (path.length > 8 ? [path[0], '…', ...path.slice(-2)] : path).join('.');
    }
    for (const [key, value] of Object.entries(at.value)) {
      if (value !== null && typeof value === 'object') todo.push({ value: value as object, key, parent: at });
    }
  }
  return null;
}

/** Reads a JSON body (at most 1 MiB) and validates it; an empty body counts as `{}`. */
export async function parseBody<S extends z.ZodType>(ctx: Context, schema: S): Promise<z.infer<S>> {
  const text = await readBodyText(ctx);
  let value: unknown = {};
  if (text.trim() !== '') {
    if (!ctx.is('json') && ctx.get('content-type')) {
      throw new AppError('VALIDATION_FAILED', 'The request body must be JSON (Content-Type: application/json).');
    }
    try {
      value = JSON.parse(text);
    } catch {
      throw new AppError('VALIDATION_FAILED', 'The request body is not valid JSON.');
    }
  }
  const proto = protoMember(value);
  if (proto) {
    throw new AppError('VALIDATION_FAILED', `Invalid request body: ${proto} is not a name this server accepts.`, {
      errors: [{ path: proto, message: '"__proto__" is not a name this server accepts' }],
    });
  }
  const result = schema.safeParse(value);
  if (!result.success) throw invalid(result.error, 'request body');
  return result.data;
}

export function parseQuery<S extends z.ZodType>(ctx: Context, schema: S): z.infer<S> {
  const result = schema.safeParse(ctx.query);
  if (!result.success) throw invalid(result.error, 'query');
  return result.data;
}

const uuid = z.uuid();

/** A path id that is not a UUID names nothing we have: 404, exactly like an unknown one. */
export function idParam(params: { id?: string }, what: string): string {
  const result = uuid.safeParse(params.id);
  if (!result.success) throw notFound(what);
  return result.data;
}
