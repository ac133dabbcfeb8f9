import type { Context } from 'koa';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { errorHeaders, statusOfError } from '../http/problem.ts';
import { sharedAssets } from './assets.ts';
import { html, layout, pageHeaders } from './layout.ts';
import { pageConfig } from './routes.ts';
import { signInFor } from './return-path.ts';

// A person's browser should meet a page, never a JSON problem, whatever went wrong: a refusal, a
// bad form, an outage (503), our own fault (500). Only requests outside the API are answered this
// way (not the API prefix, the OAuth and discovery paths), and only when they ask for HTML before
// JSON (browsers do, for a navigation and a form's POST alike; curl's */* does not), so every API
// client keeps the problem documents it parses.

interface Words { title: string; text: string }

const wordsFor: Record<number, Words> = {
  // The policy refuses a path before any router is asked, so a page that does not exist and one
  // closed to this account look alike here; the words cover both without telling them apart.
  403: { title: 'Page not available', text: 'There is no page at this address, or it is not open to your account.' },
  404: { title: 'Page not found', text: 'There is no page at this address.' },
  // The page exists (the Allow header says how to ask for it): a stale or forged form posted to it.
  405: { title: 'This page does not take that request', text: 'Open the page again from its link, then try once more.' },
  408: { title: 'The request took too long', text: 'Your browser stopped sending the form. Try again.' },
  413: { title: 'Too much was sent', text: 'What the form sent is larger than this server takes.' },
  429: { title: 'Too many requests', text: 'Wait a moment before you try again.' },
  500: { title: 'Something went wrong', text: 'This is a fault on our side, not anything you did.' },
  502: { title: 'The service behind keygate did not answer well', text: 'Try again in a moment.' },
  503: {
    title: 'keygate is unavailable for a moment', text: 'A store it depends on is not answering, or it is stopping. Try again in a moment.',
  },
  504: { title: 'The service behind keygate took too long', text: 'Try again in a moment.' },
};

const wordsOf = (status: number, err: unknown): Words => {
  // A 4xx detail is written for the person who sent the request; a 5xx detail is not shown.
  if (status >= 400 && status < 500 && !wordsFor[status]) {
    return { title: 'That did not work', text: err instanceof AppError ? err.detail : 'The request was not one this page can answer.' };
  }
  return wordsFor[status] ?? wordsFor[500]!;
};

export function isPageNavigation(ctx: Context, config: Config): boolean {
  const path = ctx.path;
  const prefix = config.apiPrefix;
  if (path === prefix || path.startsWith(prefix + '/') || path.startsWith('/oauth') || path.startsWith('/.well-known/')) return false;
  return ctx.accepts('application/json', 'text/html') === 'text/html' && /text\/html/i.test(ctx.get('accept'));
}

/** The status an error is answered with: ours by code, a library's own where it carries one, else 500. */
function statusOf(err: unknown): number {
  if (err instanceof AppError) return statusOfError(err);
  const s = typeof err === 'object' && err !== null ? (err as { status?: unknown }).status : undefined;
  return typeof s === 'number' && s >= 400 && s < 600 ? s : 500;
}

/**
 * Answers an error of a page request as a page: the anonymous who asked for a page go to sign in,
 * everyone else sees what happened in words and the request id to quote. False when the request is
 * not a page request (the problem document answers it). `log` hears what was not ours to expect.
 */
export function pageErrors(config: Config, log: (err: unknown, requestId: string | undefined) => void = () => {}) {
  return async function answerAsPage(ctx: Context, err: unknown): Promise<boolean> {
    if (!isPageNavigation(ctx, config)) return false;
    const status = statusOf(err);
    if (status === 500) log(err, (ctx.state as { requestId?: string }).requestId);
    if (status === 401 && (ctx.method === 'GET' || ctx.method === 'HEAD')) {
      ctx.set(pageHeaders);
      // A console page is returned to after sign-in; any other path is not (src/web/return-path.ts).
      ctx.redirect(signInFor(ctx.url));
      return true;
    }
    const words = status === 401
      ? { title: 'Sign in first', text: 'Your session has ended. Sign in again, then repeat what you were doing.' }
      : wordsOf(status, err);
    const requestId = String((ctx.state as { requestId?: string }).requestId ?? '');
    const assets = await sharedAssets();
    ctx.set(pageHeaders);
    if (err instanceof AppError) ctx.set(errorHeaders(err));
    ctx.status = status;
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = layout({
      title: words.title,
      assets,
      script: null,
      config: pageConfig(config),
      header: html``,
      main: html`<section class="panel"><h1>${words.title}</h1><p>${words.text}</p>
${status >= 500
    ? html`<p>If it goes on, give this request id to the people who run this server: <code class="request-id">${requestId}</code></p>`
    : html`<p class="muted">Request id: <code class="request-id">${requestId}</code></p>`}
<p>${status === 401 ? html`<a href="/sign-in">Sign in</a>` : html`<a href="/">Go to keygate</a>`}</p></section>`,
    });
    return true;
  };
}
