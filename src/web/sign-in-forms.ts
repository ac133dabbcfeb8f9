import type Router from '@koa/router';
import type { z } from 'zod';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { zodErrors } from '../http/body.ts';
import { setSessionCookie } from '../http/cookies.ts';
import { statusOfError } from '../http/problem.ts';
import { requestMeta, signInBody, signUpBody } from '../http/routes/auth.ts';
import type { GatewayContext, GatewayState } from '../http/state.ts';
import type { AccountService } from '../services/accounts.ts';
import { readForm } from './form-body.ts';
import type { SignInFormState } from './pages.ts';
import { safeReturnPath } from './return-path.ts';
import { fieldSentences, signInSentence, signUpSentence, type Refusal } from './sign-in-words.ts';

// POST /sign-in and /sign-up: the forms without script. The same validation and the same account
// service as the API's sign-in and sign-up; success is a 303 to where the person was going,
// refusal the page again with the error in words (and its 4xx status).

export interface SignInFormDeps {
  config: Config;
  accounts: AccountService;
  /** Draws the sign-in page, with the refused form's state, at the given status. */
  sendSignIn(ctx: GatewayContext, next: string | null, state: SignInFormState, status: number): Promise<void>;
}

/**
 * Login CSRF: a page elsewhere could post its own credentials here and sign the visitor in as the
 * attacker, who then reads what they do. A browser names the form's origin; another one is refused.
 */
function refuseOtherOrigin(ctx: GatewayContext, config: Config): void {
  const origin = ctx.get('origin');
  const own = config.publicUrl ? new URL(config.publicUrl).origin : `${ctx.protocol}://${ctx.host}`;
  if (origin !== '' && origin !== own) throw new AppError('FORBIDDEN', 'This form can only be sent from this site.');
}

export function signInForms(router: Router<GatewayState>, { config, accounts, sendSignIn }: SignInFormDeps): void {
  const secure = config.publicUrl?.startsWith('https:') ?? false;

  type Act<S extends z.ZodType> = (body: z.infer<S>, ctx: GatewayContext) => Promise<{ token: string; session: { expiresAt: Date } }>;
  const handle = <S extends typeof signInBody | typeof signUpBody>(
    form: SignInFormState['form'], schema: S, sentence: (p: Refusal) => string, act: Act<S>,
  ) =>
    async (ctx: GatewayContext) => {
      refuseOtherOrigin(ctx, config);
      const fields = await readForm(ctx);
      const next = safeReturnPath(fields.get('next'));
      const values = Object.fromEntries(['name', 'email'].filter((k) => fields.has(k))
        .map((k) => [k, String(fields.get(k)).slice(0, 254)]));
      const input = Object.fromEntries([...fields].filter(([k]) => k !== 'next'));
      // PostgreSQL's text holds no NUL: an e-mail with one would fail the lookup (a 500), so it is
      // refused with the fields, as any other malformed value.
      const nul = Object.keys(input).filter((k) => input[k]!.includes('\u0000')).map((path) => ({ path, message: 'must not contain NUL' }));
      try {
        const parsed = schema.safeParse(input);
        if (!parsed.success || nul.length > 0) {
          const errors = [...(parsed.success ? [] : zodErrors(parsed.error)), ...nul];
          const byField = Object.fromEntries(errors.filter((e) => fieldSentences[e.path]).map((e) => [e.path, fieldSentences[e.path]!]));
          await sendSignIn(ctx, next, { form, error: 'Check the fields marked below.', fields: byField, values }, 400);
          return;
        }
        const { token, session } = await act(parsed.data as z.infer<S>, ctx);
        setSessionCookie(ctx, token, session.expiresAt, secure);
        ctx.status = 303;
        ctx.redirect(next ?? '/settings/developers');
      } catch (err) {
        // A refusal the person can act on is said on the form; anything else is an error page.
        if (!(err instanceof AppError) || statusOfError(err) >= 500) throw err;
        const error = sentence({ code: err.code, detail: err.detail });
        await sendSignIn(ctx, next, { form, error, fields: {}, values }, statusOfError(err));
      }
    };

  router.post('/sign-in', handle('sign-in', signInBody, signInSentence, (body, ctx) => accounts.signIn(body, requestMeta(ctx))));
  router.post('/sign-up', async (ctx, next) => {
    if (!config.auth.signUp) throw new AppError('FORBIDDEN', 'Sign-up is closed on this server. Ask an administrator for an account.');
    await next();
  }, handle('sign-up', signUpBody, signUpSentence, (body, ctx) => accounts.signUp(body, requestMeta(ctx))));
}
