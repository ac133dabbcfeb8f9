import type { Middleware, Next } from 'koa';
import type { Config } from '../../config.ts';
import { AppError } from '../../errors.ts';
import { adminStanding } from '../../http/admin-only.ts';
import type { GatewayContext, GatewayState } from '../../http/state.ts';
import { html } from '../layout.ts';
import { pageConfig } from '../routes.ts';
import { sendConsolePage } from './frame.ts';

// The console pages' side of the one admin rule (http/admin-only.ts): the same standing, answered
// for a browser. Anonymous visitors are sent to sign in and back (the page errors do that with a
// 401); a signed-in non-admin gets a page in words saying what this is; a key gets a 403.

const forAdminsOnly = (email: string) => html`<section class="panel"><h1>The operator console is for admins</h1>
<p>Your account, ${email}, is not an admin of this server. Ask one of its admins if you need access.</p>
<p><a href="/settings/developers">Go to your API keys</a></p></section>`;

/** `router.use(requireAdminPage(config))` before every console page. */
export function requireAdminPage(config: Config): Middleware<GatewayState> {
  return async function requireAdminPage(ctx: GatewayContext, next: Next) {
    const c = ctx.state.caller;
    switch (adminStanding(c)) {
      case 'admin':
        return next();
      case 'anonymous':
        throw new AppError('UNAUTHENTICATED', 'Sign in to use the operator console.');
      case 'not-a-session':
        throw new AppError('FORBIDDEN', 'The operator console needs a signed-in admin; an API key cannot open it.');
      case 'not-an-admin': {
        const email = c.kind === 'session' ? c.user.email : '';
        const page = { title: 'For admins only', current: '', email, status: 403, main: forAdminsOnly(email) };
        await sendConsolePage(ctx, pageConfig(config), page);
      }
    }
  };
}
