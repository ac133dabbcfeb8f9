import Router from '@koa/router';
import type { Config } from '../config.ts';
import { AppError } from '../services/errors.ts';
import type { GatewayContext, GatewayState } from '../http/state.ts';
import { lazyAssets } from './assets.ts';
import { layout, pageHeaders, raw, type Html } from './layout.ts';
import { accountHeader, developersMain, keysOffMain, signInMain } from './pages.ts';
import type { PageConfig } from './page-config.ts';

export interface WebDeps { config: Config }

export function pageConfig(config: Config): PageConfig {
  const k = config.apiKeys;
  return {
    apiPrefix: config.apiPrefix,
    signUp: config.auth.signUp,
    keys: k.enabled
      ? {
          variant: k.variant,
          // Variant B's create body has no scopes, so it never offers them (spec 9).
          offerAi: k.variant === 'A' && config.ai.enabled,
          offerMcp: k.variant === 'A' && config.mcpServer.enabled,
          maxKeysPerUser: k.variant === 'A' ? k.maxKeysPerUser : null,
          maxCreatesPerDay: k.variant === 'A' ? k.maxCreatesPerDay : null,
        }
      : null,
  };
}

/** The pages: /sign-in and /settings/developers, and their assets under /assets/. */
export function webRoutes({ config }: WebDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  const assets = lazyAssets();
  const pageCfg = pageConfig(config);

  const sendPage = async (ctx: GatewayContext, page: { title: string; script: 'signIn' | 'developers'; header: Html; main: Html }) => {
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
  router.get('/sign-in', async (ctx) => {
    if (ctx.state.caller.kind === 'session') return redirect(ctx, '/settings/developers');
    await sendPage(ctx, { title: 'Sign in', script: 'signIn', header: raw(''), main: signInMain(config.auth.signUp) });
  });

  router.get('/settings/developers', async (ctx) => {
    const caller = ctx.state.caller;
    // A key is not a signed-in person: the page manages keys with a session only.
    if (caller.kind !== 'session') return redirect(ctx, '/sign-in');
    await sendPage(ctx, {
      title: 'Developers',
      script: 'developers',
      header: accountHeader(caller.user.email),
      main: pageCfg.keys ? developersMain(pageCfg.keys, config.apiPrefix) : keysOffMain(),
    });
  });

  router.get('/assets/:file', async (ctx) => {
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
