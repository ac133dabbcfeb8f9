import type { EndpointView, RevealedSecret } from '../../services/events/webhooks.ts';
import { html, type Html } from '../layout.ts';
import { dateTime } from './frame.ts';
import { shortUrl } from './webhook-text.ts';

// The page an add or a rotation redirects to, carrying its one-time token in `?secret=`. It shows
// the secret once, to the admin who made the change, on whichever instance serves it. It holds no
// form: it is sent with `Referrer-Policy: no-referrer`, under which a form's POST is refused as
// cross-origin; its links lead on to the pages that have them.

export const revealAddress = (id: string, token: string) => `/admin/webhooks/${encodeURIComponent(id)}?secret=${token}`;

const onward = (id: string) => html`<p class="actions"><a class="button" href="/admin/webhooks/${id}">Continue to the endpoint</a>
<a class="button secondary" href="/admin/webhooks">All endpoints</a></p>`;

export function revealedMain(id: string, r: RevealedSecret): Html {
  const words = r.rotated
    ? html`<p>The new signing secret of <span class="key-name">${r.url}</span>, shown this once. The old one signs beside it
until ${dateTime(r.previousSecretExpiresAt)}; until then the secret cannot be rotated again.</p>`
    : html`<p>Its signing secret, shown this once: copy it into the receiver of <span class="key-name">${r.url}</span>.</p>`;
  return html`<div class="wide"></div><h1>${r.rotated ? 'Secret rotated' : 'Endpoint added'}</h1>
<section class="panel notice" role="status" aria-labelledby="secret-title"><h2 id="secret-title" class="visually-hidden">Signing secret</h2>
${words}
<p><code class="secret">${r.secret}</code></p></section>
${onward(id)}`;
}

/** Reloaded, opened again, too late, tampered with, or by another admin: all read alike. */
export function notShownMain(w: EndpointView): Html {
  return html`<div class="wide"></div><h1 class="key-name">${shortUrl(w.url)}</h1>
<section class="panel notice" role="status" aria-labelledby="secret-title"><h2 id="secret-title">Signing secret</h2>
<p>The signing secret is shown once, on the page that followed the change, to the admin who made it, within a minute,
and is not shown again here. If it was not copied, rotate the secret (the API and <code>npx keygate webhook rotate</code>
answer it directly).</p></section>
${onward(w.id)}`;
}
