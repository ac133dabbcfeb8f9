import type { GatewayContext } from '../../http/state.ts';
import { sharedAssets } from '../assets.ts';
import { html, layout, pageHeaders, type Html } from '../layout.ts';
import type { PageConfig } from '../page-config.ts';

// What every console page shares: the header with the sections, the page's words in <main>, and
// the one confirmation dialog the script fills from the link that opened it.

const SECTIONS = [
  ['/admin', 'Overview'], ['/admin/users', 'Users'], ['/admin/keys', 'Keys'], ['/admin/audit', 'Audit log'], ['/admin/policy', 'Policy'],
  ['/admin/webhooks', 'Webhooks'],
] as const;

export function consoleHeader(email: string, current: string): Html {
  const item = ([href, label]: (typeof SECTIONS)[number]) =>
    html`<li><a href="${href}"${href === current ? html` aria-current="page"` : false}>${label}</a></li>`;
  return html`<nav class="console-nav" aria-label="Operator console"><ul>${SECTIONS.map(item)}</ul></nav>
<div class="account"><span class="who">Signed in as <strong>${email}</strong></span></div>`;
}

export const MESSAGE_LABEL = 'Why (optional; kept as the new version’s message)';

/** Opened by the page script on a link marked data-confirm; without script the link leads to a confirmation page. */
const confirmDialog = html`<dialog id="confirm-dialog" aria-labelledby="confirm-title" aria-describedby="confirm-text">
<form method="post" id="confirm-form">
<h2 id="confirm-title"></h2>
<p id="confirm-text"></p>
<div class="field" id="confirm-message-field" hidden><label for="confirm-message">${MESSAGE_LABEL}</label>
<input id="confirm-message" name="message" type="text" maxlength="500" disabled></div>
<div class="actions">
<button type="button" id="confirm-cancel" class="secondary" autofocus>Cancel</button>
<button type="submit" id="confirm-go" class="danger"></button>
</div>
</form>
</dialog>`;

export async function sendConsolePage(
  ctx: GatewayContext, cfg: PageConfig, page: { title: string; current: string; email: string; main: Html; status?: number },
) {
  const bundle = await sharedAssets();
  ctx.set(pageHeaders);
  // Under no-referrer Chromium sends `Origin: null` with a form POST, which the cross-origin rule
  // (src/http/policy/middleware.ts) rightly refuses; same-origin still sends nothing to other sites.
  ctx.set('Referrer-Policy', 'same-origin');
  ctx.status = page.status ?? 200;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = layout({
    title: page.title, script: bundle.urls.console, assets: bundle, config: cfg,
    header: consoleHeader(page.email, page.current), main: html`${page.main}${confirmDialog}`,
  });
}

/** A link to an action's confirmation page that the script turns into the dialog. */
export function confirmLink(
  href: string, label: string, opts: { title: string; text: string; go: string; danger?: boolean; message?: boolean },
): Html {
  return html`<a class="action-link${opts.danger ? ' danger-link' : ''}" href="${href}"
 data-confirm-title="${opts.title}" data-confirm-text="${opts.text}" data-confirm-go="${opts.go}"${
  opts.message ? html` data-confirm-message="1"` : false}>${label}</a>`;
}

/** The page a link without script reaches: the same question, and a form that POSTs to the same address. */
export function confirmPage(action: string, opts: { title: string; text: string; go: string; back: string; extra?: Html }): Html {
  return html`<section class="panel" aria-labelledby="confirm-page-title">
<h1 id="confirm-page-title">${opts.title}</h1>
<p>${opts.text}</p>
<form method="post" action="${action}">
${opts.extra ?? false}
<div class="actions"><a class="button secondary" href="${opts.back}">Cancel</a>
<button type="submit" class="danger">${opts.go}</button></div>
</form>
</section>`;
}

export const dateTime = (iso: string | null) =>
  (iso ? html`<time datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>` : html`—`);

/** "?a=1&b=2" from the set values, for links that keep the current filter. */
export function queryOf(q: Record<string, string | undefined>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v) p.set(k, v);
  const s = p.toString();
  return s ? `?${s}` : '';
}
