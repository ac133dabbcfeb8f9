import Router from '@koa/router';
import { keysOn, type Config } from '../config.ts';
import { AppError } from '../errors.ts';
import type { GatewayContext, GatewayState } from '../http/state.ts';
import { ASSETS_PATH, sharedAssets } from './assets.ts';
import { safeReturnPath } from './return-path.ts';
import { html, layout, pageHeaders, raw, type Html } from './layout.ts';
import { connectedAppsMarkup } from './connected-apps-markup.ts';
import { accountHeader, developersMain, keysOffMain, signInMain, type SignInFormState } from './pages.ts';
import { signInForms } from './sign-in-forms.ts';
import type { AccountService } from '../services/accounts.ts';
import { leakedKeysMarkup } from './leaked-keys-markup.ts';
import type { LeakedKeyView } from '../services/keys/service.ts';
import type { PageConfig } from './page-config.ts';
import type { PolicyHolder } from '../policy/engine.ts';
import type { ScopeCatalog } from '../policy/scopes.ts';
import { offeredScopes } from '../http/routes/scopes.ts';

export interface WebDeps {
  config: Config;
  policy: PolicyHolder;
  accounts: AccountService;
  /** The person's keys revoked because they were found public, shown on the page with where. */
  leakedKeys?: (userId: string) => Promise<LeakedKeyView[]>;
}

/**
 * Built per page: the scopes come with the policy, and a policy apply can change them. A page that
 * offers no scopes (the consent page) passes none.
 */
export function pageConfig(config: Config, scopes: Pick<ScopeCatalog, 'list'> = { list: [] }): PageConfig {
  const k = keysOn(config);
  return {
    apiPrefix: config.surface.paths.api,
    signUp: config.auth.signUp,
    keys: k
      ? {
          variant: k.variant,
          // Variant B's create body has no scopes, so it never offers them.
          scopes: offeredScopes(config.surface, scopes),
          maxKeysPerUser: k.variant === 'A' ? k.maxKeysPerUser : null,
          maxCreatesPerDay: k.variant === 'A' ? k.maxCreatesPerDay : null,
          maxLifetimeDays: k.maxLifetimeDays ?? null,
        }
      : null,
    connectedApps: config.surface.features.mcp,
  };
}

/** The pages: /sign-in (and its forms' POSTs) and /settings/developers, and their assets under /assets/. */
export function webRoutes({ config, policy, accounts, leakedKeys }: WebDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  const assets = sharedAssets;

  type Page = { title: string; script: 'signIn' | 'developers'; header: Html; main: Html };
  const sendPage = async (ctx: GatewayContext, pageCfg: PageConfig, page: Page) => {
    const bundle = await assets();
    ctx.set(pageHeaders);
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = layout({ ...page, script: bundle.urls[page.script], assets: bundle, config: pageCfg });
  };

  // Where a visitor is sent depends on their cookie: no cache may keep the answer.
  const redirect = (ctx: GatewayContext, to: string) => {
    ctx.set(pageHeaders);
    ctx.redirect(to);
  };

  // The caller is already resolved by the pipeline, so the server can send a visitor to the right
  // page at once; the script still handles a session that ends while the page is open.
  // The address a newcomer opens first: it leads to the page that fits who they are.
  router.get('/', (ctx) => redirect(ctx, ctx.state.caller.kind === 'session' ? '/settings/developers' : '/sign-in'));

  const sendSignIn = async (ctx: GatewayContext, next: string | null, state: SignInFormState | null = null, status = 200) => {
    await sendPage(ctx, pageConfig(config, policy.current.scopes), {
      title: 'Sign in', script: 'signIn', header: raw(''), main: signInMain(config.auth.signUp, next, state),
    });
    // Under no-referrer Chromium posts the forms with `Origin: null`, which the sign-in form's
    // cross-site rule refuses; same-origin still tells other sites nothing.
    ctx.set('Referrer-Policy', 'same-origin');
    ctx.status = status;
  };
  router.get('/sign-in', async (ctx) => {
    const next = safeReturnPath(typeof ctx.query.next === 'string' ? ctx.query.next : '');
    if (ctx.state.caller.kind === 'session') return redirect(ctx, next ?? '/settings/developers');
    await sendSignIn(ctx, next);
  });
  signInForms(router, { config, accounts, sendSignIn });

  router.get('/settings/developers', async (ctx) => {
    const caller = ctx.state.caller;
    // A key is not a signed-in person: the page manages keys with a session only.
    if (caller.kind !== 'session') return redirect(ctx, '/sign-in');
    const pageCfg = pageConfig(config, policy.current.scopes);
    const leaked = pageCfg.keys && leakedKeys ? await leakedKeys(caller.user.id) : [];
    await sendPage(ctx, pageCfg, {
      title: 'Developers',
      script: 'developers',
      header: accountHeader(caller.user.email),
      main: html`${pageCfg.keys ? developersMain(pageCfg.keys, config.apiPrefix) : keysOffMain()}${leakedKeysMarkup(leaked)}${
        pageCfg.connectedApps ? connectedAppsMarkup() : false}`,
    });
  });

  router.get(`${ASSETS_PATH}:file`, async (ctx) => {
    const asset = (await assets()).files.get(ctx.params.file ?? '');
    if (!asset) throw new AppError('NOT_FOUND', 'There is no such asset.');
    ctx.set('X-Content-Type-Options', 'nosniff');
    // The name carries a hash of the content: a changed file is a new name.
    ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
    ctx.type = asset.contentType;
    ctx.body = Buffer.from(asset.body);
  });

  return router;
}
