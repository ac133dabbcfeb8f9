import Router from '@koa/router';
import type { Config } from '../../config.ts';
import { AppError } from '../../errors.ts';
import type { GatewayContext, GatewayState } from '../../http/state.ts';
import { requestMeta } from '../../http/routes/auth.ts';
import { readBodyText } from '../../http/body.ts';
import type { DeliveryView, EndpointView, WebhookService } from '../../services/events/webhooks.ts';
import { html, type Html } from '../layout.ts';
import { pageConfig } from '../routes.ts';
import { confirmLink, confirmPage, dateTime, sendConsolePage } from './frame.ts';
import { theAdmin } from '../../http/admin-only.ts';
import { requireAdminPage } from './admin-pages.ts';
import { webhookPageOperations } from './operations.ts';
import { notShownMain, revealAddress, revealedMain } from './webhook-reveal.ts';
import { plainly, shortUrl } from './webhook-text.ts';
import { serve } from '../../http/operation.ts';

// /admin/webhooks: the endpoints, their recent deliveries and attempts, and the actions of the
// admin API (add, test, disable or enable, redeliver) as plain forms that work without script.

const stateBadge = (w: EndpointView) => (w.enabled
  ? html`<span class="badge">enabled</span>`
  : html`<span class="badge bad">disabled${w.disabledReason === 'failing' ? ': every delivery failed for days' : ''}</span>`);

const post = (action: string, label: string, cls = 'secondary') =>
  html`<form method="post" action="${action}" class="inline-form"><button type="submit" class="${cls}">${label}</button></form>`;

const MAX_DESCRIPTION = 500;
const tooLong = () => new AppError('VALIDATION_FAILED', `The description must be at most ${MAX_DESCRIPTION} characters.`,
  { errors: [{ path: 'description', message: `must be at most ${MAX_DESCRIPTION} characters` }] });

/** A cell that, where the table stacks (a phone), names its column. */
const cell = (label: string, content: Html | string) => html`<td data-label="${label}">${content}</td>`;

const endpointRow = (w: EndpointView) => html`<tr>
<th scope="row" class="key-name"><a href="/admin/webhooks/${w.id}">${shortUrl(w.url)}</a></th>
${cell('Events', w.events?.join(', ') ?? 'all')}${cell('State', stateBadge(w))}
${cell('Description', html`<span class="key-name">${plainly(w.description)}</span>`)}
${cell('Actions', html`${post(`/admin/webhooks/${w.id}/test`, 'Send test')}${toggle(w)}`)}</tr>`;

// Disabling is asked first, as the console's other actions that stop something are: a link to a
// confirmation page, which the page script opens as a dialog instead.
const DISABLE_TEXT = 'No event is sent to it while it is disabled, and events from that time are not sent later.';
const disableLink = (w: EndpointView) => confirmLink(`/admin/webhooks/${w.id}/disable`, 'Disable',
  { title: `Disable ${shortUrl(w.url)}?`, text: DISABLE_TEXT, go: 'Disable endpoint', danger: true });

const toggle = (w: EndpointView) => (w.enabled ? disableLink(w) : post(`/admin/webhooks/${w.id}/enable`, 'Enable'));

function listMain(hooks: EndpointView[]): Html {
  return html`<div class="wide"></div><h1>Webhooks</h1>
<p class="lead">keygate posts signed events (Standard Webhooks) to these endpoints when keys, grants, users or the policy change.</p>
${hooks.length === 0 ? html`<p>No endpoints yet.</p>` : html`<div class="table-wrap" tabindex="0" role="region"
 aria-label="Webhook endpoints"><table class="stack">
<caption class="visually-hidden">Webhook endpoints</caption>
<thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">State</th><th scope="col">Description</th>
<th scope="col">Actions</th></tr></thead>
<tbody>${hooks.map(endpointRow)}</tbody>
</table></div>`}
<section class="panel" aria-labelledby="add-title"><h2 id="add-title">Add an endpoint</h2>
<form method="post" action="/admin/webhooks">
<div class="field"><label for="url">URL</label>
<input id="url" name="url" type="text" inputmode="url" autocomplete="off" required placeholder="https://example.com/keygate"></div>
<div class="field"><label for="description">Description</label>
<input id="description" name="description" type="text" maxlength="${MAX_DESCRIPTION}"></div>
<button type="submit" class="primary">Add endpoint</button>
</form></section>`;
}

// The answer's first lines as sent, in a box of their own that scrolls sideways when a line is
// long (a 1 KB answer is often one line), so the page itself never does.
const answerBox = (a: DeliveryView['attempts'][number]) => html`<div class="table-wrap" tabindex="0" role="region"
 aria-label="Answer at ${a.at}"><pre class="answer">${plainly(a.response!.split('\n').slice(0, 5).join('\n'))}</pre></div>`;

const attemptLine = (a: DeliveryView['attempts'][number]) => {
  const answer = a.response ? answerBox(a) : false;
  const status = a.status === null ? 'no answer' : `HTTP ${a.status}`;
  return html`<li>${dateTime(a.at)}: ${status} in ${a.durationMs} ms${a.error ? html` · ${a.error}` : false}${answer}</li>`;
};

const nextAttempt = (d: DeliveryView) => (d.nextAttemptAt ? html` · next attempt ${dateTime(d.nextAttemptAt)}` : false);

const deliveryItem = (w: EndpointView) => (d: DeliveryView) => html`<li class="panel">
<h3><code>${d.type}</code> <span class="badge${d.state === 'failed' ? ' bad' : ''}">${d.state}</span></h3>
<p class="muted key-name">Event ${d.eventId} · ${dateTime(d.createdAt)}${nextAttempt(d)}</p>
${d.attempts.length ? html`<ol class="attempts">${d.attempts.map(attemptLine)}</ol>` : html`<p>No attempt yet.</p>`}
${post(`/admin/webhooks/${w.id}/deliveries/${d.eventId}/redeliver`, 'Redeliver')}
</li>`;

function deliveriesMain(w: EndpointView, deliveries: DeliveryView[]): Html {
  return html`<div class="wide"></div><p><a href="/admin/webhooks">All endpoints</a></p><h1 class="key-name">${shortUrl(w.url)}</h1>
<p>${stateBadge(w)} · events ${w.events?.join(', ') ?? 'all'}</p>
<div class="actions">${post(`/admin/webhooks/${w.id}/test`, 'Send test')}${post(`/admin/webhooks/${w.id}/rotate`, 'Rotate secret')}
${toggle(w)}</div>
${shortUrl(w.url) === w.url ? false : html`<p class="key-name">The whole address: <code>${w.url}</code></p>`}
<h2>Recent deliveries</h2>
${deliveries.length === 0
    ? html`<p>No deliveries yet.</p>`
    : html`<ul class="console-keys deliveries">${deliveries.map(deliveryItem(w))}</ul>`}`;
}

export function webhookPages({ config, webhooks }: { config: Config; webhooks: WebhookService }): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  router.use(requireAdminPage(config));
  const pages = webhookPageOperations;
  const show = (ctx: GatewayContext, email: string, title: string, main: Html) =>
    sendConsolePage(ctx, pageConfig(config), { title, current: '/admin/webhooks', email, main });
  const back = (ctx: GatewayContext, to: string) => { ctx.status = 303; ctx.redirect(to); };

  serve(router, pages.list, async (ctx) => {
    const u = theAdmin(ctx);
    await show(ctx, u.email, 'Webhooks', listMain(await webhooks.list()));
  });
  // Post, then redirect: the page with the secret is a GET, so reloading it adds nothing. The
  // secret waits in the endpoint's row, so any instance of the fleet can serve that page.
  serve(router, pages.add, async (ctx) => {
    const u = theAdmin(ctx);
    const form = new URLSearchParams(await readBodyText(ctx, 16 * 1024));
    const input = { url: form.get('url') ?? '', description: form.get('description') ?? '' };
    // As the API's schema: a longer one is refused, not cut short without a word.
    if (input.description.length > MAX_DESCRIPTION) throw tooLong();
    const { id, token } = await webhooks.createToReveal({ userId: u.id }, input, requestMeta(ctx));
    back(ctx, revealAddress(id, token));
  });
  serve(router, pages.endpoint, async (ctx) => {
    const u = theAdmin(ctx);
    const id = ctx.params.id!;
    const token = ctx.query.secret;
    if (token !== undefined) {
      // A HEAD (answered by this GET route) has no body to show the secret in: it must not use the token up.
      const take = ctx.method === 'GET' && typeof token === 'string';
      const revealed = take ? await webhooks.takeReveal({ userId: u.id }, id, token) : null;
      if (revealed) await show(ctx, u.email, 'Signing secret', revealedMain(id, revealed));
      else {
        const w = await webhooks.get(id);
        await show(ctx, u.email, `Webhook ${shortUrl(w.url)}`, notShownMain(w));
      }
      // The address carries the token: no page it links to learns it. The page keeps no form, as
      // a POST under this policy would carry `Origin: null`, which the cross-origin rule refuses.
      ctx.set('Referrer-Policy', 'no-referrer');
      return;
    }
    const w = await webhooks.get(id);
    await show(ctx, u.email, `Webhook ${shortUrl(w.url)}`, deliveriesMain(w, (await webhooks.deliveries(w.id, 20)).deliveries));
  });
  serve(router, pages.askDisable, async (ctx) => {
    const u = theAdmin(ctx);
    const w = await webhooks.get(ctx.params.id!);
    const title = `Disable ${shortUrl(w.url)}?`;
    const main = confirmPage(ctx.path, { title, text: DISABLE_TEXT, go: 'Disable endpoint', back: '/admin/webhooks' });
    await show(ctx, u.email, title, main);
  });
  serve(router, pages.act, async (ctx) => {
    const u = theAdmin(ctx);
    const id = ctx.params.id!;
    const action = ctx.params.action;
    if (action === 'rotate') {
      // A second rotation inside the overlap is refused (409): the error page says until when.
      back(ctx, revealAddress(id, (await webhooks.rotateToReveal({ userId: u.id }, id, requestMeta(ctx))).token));
      return;
    }
    if (action === 'test') await webhooks.test({ userId: u.id }, id);
    else if (action === 'disable' || action === 'enable') {
      await webhooks.update({ userId: u.id }, id, { enabled: action === 'enable' }, requestMeta(ctx));
    }
    else throw new AppError('NOT_FOUND', 'No such action.');
    back(ctx, action === 'test' ? `/admin/webhooks/${id}` : '/admin/webhooks');
  });
  serve(router, pages.redeliver, async (ctx) => {
    await webhooks.redeliver(ctx.params.id!, ctx.params.eventId!);
    back(ctx, `/admin/webhooks/${ctx.params.id}`);
  });
  return router;
}
