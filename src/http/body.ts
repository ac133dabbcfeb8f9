import type { Context } from 'koa';
import { z } from 'zod';
import { AppError, notFound, type FieldError } from '../services/errors.ts';

export const MAX_BODY_BYTES = 1024 * 1024;

/** Over the limit, the rest of the body is not worth reading: the connection closes after the answer. */
export const tooLarge = () => new AppError('PAYLOAD_TOO_LARGE', 'The request body is larger than 1 MiB.', {}, { Connection: 'close' });

async function readRaw(ctx: Context): Promise<string> {
  const declared = Number(ctx.get('content-length') || 0);
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function zodErrors(error: z.ZodError): FieldError[] {
  return error.issues.map((i) => {
    const path = i.path.map(String).join('.');
    if (i.code === 'unrecognized_keys') return { path: path || '(body)', message: `unknown field${i.keys.length > 1 ? 's' : ''}: ${i.keys.join(', ')}` };
    return { path: path || '(body)', message: i.message };
  });
}

function invalid(error: z.ZodError, what: string): AppError {
  const errors = zodErrors(error);
  const first = errors[0];
  return new AppError('VALIDATION_FAILED', first ? `Invalid ${what}: ${first.path} ${first.message}.` : `Invalid ${what}.`, { errors });
}

/** Reads a JSON body (at most 1 MiB) and validates it; an empty body counts as `{}`. */
export async function parseBody<S extends z.ZodType>(ctx: Context, schema: S): Promise<z.infer<S>> {
  const text = await readRaw(ctx);
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
