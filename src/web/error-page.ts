import type { Context } from 'koa';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { statusOfError } from '../http/problem.ts';
import { sharedAssets } from './assets.ts';
import { html, layout, pageHeaders } from './layout.ts';
import { pageConfig } from './routes.ts';
import { signInFor } from './return-path.ts';

// A person who types an address into a browser should meet a page, not a JSON problem. Only
// navigations outside the API are answered this way: GET or HEAD, outside the API prefix and the
// OAuth and discovery paths, and asking for HTML before JSON (browsers do; curl's */* does not), so
// every API client keeps the problem documents it parses.

const wordsFor: Record<number, { title: string; text: string }> = {
  // The policy refuses a path before any router is asked, so a page that does not exist and one
  // closed to this account look alike here; the words cover both without telling them apart.
  403: { title: 'Page not available', text: 'There is no page at this address, or it is not open to your account.' },
  404: { title: 'Page not found', text: 'There is no page at this address.' },
  405: { title: 'Page not found', text: 'There is no page at this address.' },
};

export function isPageNavigation(ctx: Context, config: Config): boolean {
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return false;
  const path = ctx.path;
  const prefix = config.apiPrefix;
  if (path === prefix || path.startsWith(prefix + '/') || path.startsWith('/oauth') || path.startsWith('/.well-known/')) return false;
  return ctx.accepts('application/json', 'text/html') === 'text/html' && /text\/html/i.test(ctx.get('accept'));
}

/**
 * Answers a refused or unknown navigation as a page: the anonymous go to sign in,
 * the rest see what happened in words. False when the request is not a page navigation, or the
 * error is not one a page can explain (outages stay problems with their status).
 */
export function pageErrors(config: Config) {
  return async function answerAsPage(ctx: Context, err: unknown): Promise<boolean> {
    if (!(err instanceof AppError) || !isPageNavigation(ctx, config)) return false;
    const status = statusOfError(err);
    if (status === 401) {
      ctx.set(pageHeaders);
      // A console page is returned to after sign-in; any other path is not (src/web/return-path.ts).
      ctx.redirect(signInFor(ctx.url));
      return true;
    }
    const words = wordsFor[status];
    if (!words) return false;
    const assets = await sharedAssets();
    ctx.set(pageHeaders);
    ctx.status = status === 405 ? 404 : status;
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = layout({
      title: words.title,
      assets,
      script: null,
      config: pageConfig(config),
      header: html``,
      main: html`<section class="panel"><h1>${words.title}</h1><p>${words.text}</p><p><a href="/">Go to keygate</a></p></section>`,
    });
    return true;
  };
}
