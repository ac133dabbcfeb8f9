import { AppError } from '../errors.ts';
import type { GatewayContext } from '../http/state.ts';

// What an anonymous caller may store with one registration (CONTRACT 22). Refused as problems that
// also carry RFC 7591's `error`, so an OAuth client library reads the reason as well.

export const MAX_REGISTRATION_BYTES = 8 * 1024;
export const MAX_CLIENT_NAME = 200;

const refused = (detail: string) => new AppError('VALIDATION_FAILED', detail, { error: 'invalid_client_metadata', error_description: detail });

function tooLarge(): AppError {
  const detail = `The client metadata is larger than ${MAX_REGISTRATION_BYTES} bytes, the most this server stores for a client.`;
  // What is left unread would be taken for the next request: the connection closes.
  return new AppError('VALIDATION_FAILED', detail, { error: 'invalid_client_metadata', error_description: detail }, { closeConnection: true });
}

/** Reads the registration body (at most 8 KB) and checks what the library does not bound; answers the text. */
export async function readRegistration(ctx: GatewayContext): Promise<string> {
  if (Number(ctx.get('content-length') || 0) > MAX_REGISTRATION_BYTES) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_REGISTRATION_BYTES) throw tooLarge();
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  let metadata: unknown;
  try {
    metadata = JSON.parse(text);
  } catch {
    throw refused('The client metadata is not valid JSON.');
  }
  const name = metadata !== null && typeof metadata === 'object' ? (metadata as { client_name?: unknown }).client_name : undefined;
  if (typeof name === 'string' && [...name].length > MAX_CLIENT_NAME) throw refused(`client_name is longer than ${MAX_CLIENT_NAME} characters.`);
  return text;
}
