import type { Context } from 'koa';
import { AppError } from '../errors.ts';
import { readBodyText } from '../http/body.ts';

// A page's form POST without script: application/x-www-form-urlencoded, small. The pages take
// nothing else, so a JSON or multipart body sent to a page route is refused, not guessed at.

const MAX_FORM_BYTES = 16 * 1024;

/** The submitted fields; an empty body is an empty form. */
export async function readForm(ctx: Context): Promise<URLSearchParams> {
  const tooLarge = () => new AppError('PAYLOAD_TOO_LARGE', 'A form sends at most 16 KiB.', {}, { closeConnection: true });
  const text = await readBodyText(ctx, MAX_FORM_BYTES, tooLarge);
  if (text === '') return new URLSearchParams();
  if (!ctx.is('application/x-www-form-urlencoded')) {
    throw new AppError('VALIDATION_FAILED', 'A page takes a form (application/x-www-form-urlencoded).');
  }
  return new URLSearchParams(text);
}
