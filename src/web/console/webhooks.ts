import { randomBytes } from 'node:crypto';
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
import { serve } from '../../http/operation.ts';

// /admin/webhooks: the endpoints, their recent deliveries and attempts, and the actions of the
// admin API (add, test, disable or enable, redeliver) as plain forms that work without script.

const stateBadge = (w: EndpointView) => (w.enabled
  ? html`<span class="badge">enabled</span>`
  : html`<span class="badge bad">disabled${w.disabledReason === 'failing' ? ': every delivery failed for days' : ''}</span>`);

const post = (action: string, label: string, cls = 'secondary') =>
  html`<form method="post" action="${action}" class="inline-form"><button type="submit" class="${cls}">${label}</button></form>`;

/**
 * A new endpoint's secret, between the add form's POST and the page its redirect (303) shows: held
 * in this process's memory only, under a random one-time name in the redirect's URL, for the admin
 * who added it, for a minute at most, and forgotten once shown. A reload of that page shows it no
 * more, and a reload after the POST no longer posts the form again.
 */
interface Created { url: string; secret: string; adminId: string; until: number; previousUntil?: string }
const SHOWN_WITHIN_MS = 60_000;
const MAX_HELD = 100;

function createdSecrets(now: () => number = Date.now) {
  const held = new Map<string, Created>();
  const prune = () => {
    for (const [name, c] of held) if (c.until <= now()) held.delete(name);
  };
  return {
    keep(c: Omit<Created, 'until'>): string {
      prune();
      // Oldest first: past the bound, the oldest secret not shown yet is given up.
      while (held.size >= MAX_HELD) held.delete(held.keys().next().value!);
      const name = randomBytes(18).toString('base64url');
      held.set(name, { ...c, until: now() + SHOWN_WITHIN_MS });
      return name;
    },
    take(name: string, adminId: string): Created | null {
      prune();
      const c = held.get(name);
      if (!c || c.adminId !== adminId) return null;
      held.delete(name);
      return c;
    },
  };
}

/** The page a secret was shown on, opened again (a reload), or on an instance that does not hold it. */
const shownBefore = (what: string) => html`<section class="panel notice" role="status"><h2>${what}</h2>
<p>The signing secret is shown once, on the page that followed, and is not shown again here. If it was not copied,
rotate the secret (the API and <code>npx keygate webhook rotate</code> answer it directly).</p></section>`;

const createdNotice = (created: { url: string; secret: string }) => html`<section class="panel notice" role="status"><h2>Endpoint added</h2>
<p>Its signing secret, shown this once: copy it into the receiver of ${created.url}.</p>
<p><code class="secret">${created.secret}</code></p></section>`;

const rotatedNotice = (r: Created) => html`<section class="panel notice" role="status"><h2>Secret rotated</h2>
<p>The new signing secret, shown this once. The old one signs beside it until ${dateTime(r.previousUntil ?? '')};
until then the secret cannot be rotated again.</p>
<p><code class="secret">${r.secret}</code></p></section>`;

/** A cell that, where the table stacks (a phone), names its column. */
const cell = (label: string, content: Html | string) => html`<td data-label="${label}">${content}</td>`;

const endpointRow = (w: EndpointView) => html`<tr><th scope="row" class="key-name"><a href="/admin/webhooks/${w.id}">${w.url}</a></th>
${cell('Events', w.events?.join(', ') ?? 'all')}${cell('State', stateBadge(w))}${cell('Description', w.description)}
${cell('Actions', html`${post(`/admin/webhooks/${w.id}/test`, 'Send test')}${toggle(w)}`)}</tr>`;

// Disabling is asked first, as the console's other actions that stop something are: a link to a
// confirmation page, which the page script opens as a dialog instead.
const DISABLE_TEXT = 'No event is sent to it while it is disabled, and events from that time are not sent later.';
const disableLink = (w: EndpointView) => confirmLink(`/admin/webhooks/${w.id}/disable`, 'Disable',
  { title: `Disable ${w.url}?`, text: DISABLE_TEXT, go: 'Disable endpoint', danger: true });

const toggle = (w: EndpointView) => (w.enabled ? disableLink(w) : post(`/admin/webhooks/${w.id}/enable`, 'Enable'));

function listMain(hooks: EndpointView[], created: { url: string; secret: string } | 'shown' | null): Html {
  return html`<div class="wide"></div><h1>Webhooks</h1>
<p class="lead">keygate posts signed events (Standard Webhooks) to these endpoints when keys, grants, users or the policy change.</p>
${created === 'shown' ? shownBefore('Endpoint added') : created ? createdNotice(created) : false}
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
<div class="field"><label for="description">Description</label><input id="description" name="description" type="text" maxlength="500"></div>
<button type="submit" class="primary">Add endpoint</button>
</form></section>`;
}

const attemptLine = (a: DeliveryView['attempts'][number]) => {
  const answer = a.response ? html`<pre class="answer">${a.response.split('\n').slice(0, 5).join('\n')}</pre>` : false;
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

function deliveriesMain(w: EndpointView, deliveries: DeliveryView[], rotated: Created | 'shown' | null): Html {
  return html`<div class="wide"></div><p><a href="/admin/webhooks">All endpoints</a></p><h1 class="key-name">${w.url}</h1>
${rotated === 'shown' ? shownBefore('Secret rotated') : rotated ? rotatedNotice(rotated) : false}
<p>${stateBadge(w)} · events ${w.events?.join(', ') ?? 'all'} · ${post(`/admin/webhooks/${w.id}/test`, 'Send test')}
${post(`/admin/webhooks/${w.id}/rotate`, 'Rotate secret')}</p>
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

  const secrets = createdSecrets();

  serve(router, pages.list, async (ctx) => {
    const u = theAdmin(ctx);
    const name = typeof ctx.query.created === 'string' ? ctx.query.created : null;
    const created = name === null ? null : (secrets.take(name, u.id) ?? 'shown');
    await show(ctx, u.email, 'Webhooks', listMain(await webhooks.list(), created));
  });
  // Post, then redirect: the page with the secret is a GET, so reloading it adds nothing.
  serve(router, pages.add, async (ctx) => {
    const u = theAdmin(ctx);
    const form = new URLSearchParams(await readBodyText(ctx, 16 * 1024));
    const input = { url: form.get('url') ?? '', description: (form.get('description') ?? '').slice(0, 500) };
    const created = await webhooks.create({ userId: u.id }, input, requestMeta(ctx));
    back(ctx, `/admin/webhooks?created=${secrets.keep({ url: created.url, secret: created.secret, adminId: u.id })}`);
  });
  serve(router, pages.endpoint, async (ctx) => {
    const u = theAdmin(ctx);
    const w = await webhooks.get(ctx.params.id!);
    const name = typeof ctx.query.secret === 'string' ? ctx.query.secret : null;
    const rotated = name === null ? null : (secrets.take(name, u.id) ?? 'shown');
    await show(ctx, u.email, `Webhook ${w.url}`, deliveriesMain(w, (await webhooks.deliveries(w.id, 20)).deliveries, rotated));
  });
  serve(router, pages.askDisable, async (ctx) => {
    const u = theAdmin(ctx);
    const w = await webhooks.get(ctx.params.id!);
    const main = confirmPage(ctx.path, { title: `Disable ${w.url}?`, text: DISABLE_TEXT, go: 'Disable endpoint', back: '/admin/webhooks' });
    await show(ctx, u.email, `Disable ${w.url}?`, main);
  });
  serve(router, pages.act, async (ctx) => {
    const u = theAdmin(ctx);
    const id = ctx.params.id!;
    const action = ctx.params.action;
    if (action === 'rotate') {
      // A second rotation inside the overlap is refused (409): the error page says until when.
      const r = await webhooks.rotateSecret({ userId: u.id }, id, requestMeta(ctx));
      const w = await webhooks.get(id);
      const name = secrets.keep({ url: w.url, secret: r.secret, adminId: u.id, previousUntil: r.previousSecretExpiresAt });
      back(ctx, `/admin/webhooks/${id}?secret=${name}`);
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
