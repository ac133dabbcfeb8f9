import { html, type Html } from './layout.ts';
import type { LeakedKeyView } from '../services/keys/service.ts';

// Only an https address becomes a link: a report's URL is not ours, and `javascript:` would run here.
const where = (url: string): Html => (/^https:\/\//i.test(url)
  ? html`<a href="${url}" rel="noopener noreferrer nofollow">${url}</a>`
  : html`<code>${url}</code>`);

/**
 * Keys revoked because they were found public: the owner learns why a key stopped working, and
 * where it was published, so the copy there can be removed too.
 */
export function leakedKeysMarkup(keys: LeakedKeyView[]): Html | false {
  if (keys.length === 0) return false;
  return html`<section class="panel" aria-labelledby="leaked-title">
<h2 id="leaked-title">Keys revoked because they were found public</h2>
<p class="muted">GitHub secret scanning found these keys in public places, and they were revoked at once. Remove them there, and give
 the scripts that used them a new key.</p>
<ul class="leaked-keys">
${keys.map((k) => html`<li><strong>${k.name}</strong> <code>${k.start}…</code> revoked ${k.leakedAt.slice(0, 16).replace('T', ' ')} UTC,
 found at ${where(k.leakedUrl)}</li>`)}
</ul>
</section>`;
}
