import { sharedAssets } from './assets.ts';
import { html, layout, pageHeaders, type Html } from './layout.ts';
import type { PageConfig } from './page-config.ts';
import { accountHeader } from './pages.ts';
import { OAUTH_ERROR_HEADERS, oauthErrorPage } from './oauth-error.ts';
import type { ConsentFacts, OAuthPages } from '../http/routes/oauth.ts';

// The consent step of an MCP client's authorization. Plain forms, no script: the
// decision must work even where the page's script is blocked, and each button posts to its own
// address, so a stray submit can never be read as the other answer.

/** Where the sign-in page may send a person back to: only a consent step of this server. */
export const CONSENT_RETURN = /^\/oauth\/consent\/[A-Za-z0-9_-]{1,64}$/;

/** What the page shows; documentHost, for a client known by its metadata document, stands beside the name it claims. */
export type ConsentInput = ConsentFacts;

export function consentMain({ uid, clientName, clientId, redirectOrigin, email, documentHost }: ConsentInput): Html {
  const action = (what: 'allow' | 'deny') => `/oauth/consent/${encodeURIComponent(uid)}/${what}`;
  return html`<div class="auth-grid">
<h1 class="auth-title">Connect ${clientName} to keygate?</h1>
<section class="panel" aria-labelledby="consent-title">
<h2 id="consent-title">${clientName} wants to act as you</h2>
${documentHost
    ? html`<p class="consent-host">Described by <strong>${documentHost}</strong>: the name above is what that site says about itself.</p>`
    : ''}
<p>Signed in as <strong>${email}</strong>.</p>
<p>If you allow it, <strong>${clientName}</strong> may use the MCP server of this keygate as you: call its tools, read your account and
 key details, and spend your daily request quota. It cannot sign in to this page, manage your keys or use the rest of the API.</p>
<dl class="consent-facts">
<dt>Client id</dt><dd><code>${clientId}</code></dd>
<dt>Answer sent to</dt><dd><code>${redirectOrigin}</code></dd>
</dl>
<p class="hint">You can disconnect it at any time under Settings → Developers → Connected apps.</p>
<div class="actions">
<form method="post" action="${action('allow')}"><button type="submit" class="primary">Allow</button></form>
<form method="post" action="${action('deny')}"><button type="submit" class="secondary">Deny</button></form>
</div>
</section>
</div>`;
}

/** The whole consent page, and the headers it needs on top of `pageHeaders`. */
export async function consentPage(input: ConsentInput, config: PageConfig): Promise<{ headers: Record<string, string>; body: string }> {
  const bundle = await sharedAssets();
  return {
    headers: {
      // The answer leaves by a redirect to the client after a form post; browsers hold that redirect
      // to form-action, so the client's origin (and only it) joins 'self' on this page.
      'Content-Security-Policy': pageHeaders['Content-Security-Policy']!
        .replace("form-action 'self'", `form-action 'self' ${input.redirectOrigin}`),
      // Under no-referrer a form post says `Origin: null`, which the cross-site check refuses;
      // same-origin still sends nothing to the client the answer is redirected to.
      'Referrer-Policy': 'same-origin',
    },
    body: layout({
      title: 'Connect an app', script: null, assets: bundle, config, header: accountHeader(input.email), main: consentMain(input),
    }),
  };
}

/** The pages the OAuth routes answer with (http/routes/oauth.ts takes them from the composition root). */
export function oauthPages(config: PageConfig): OAuthPages {
  return {
    headers: pageHeaders,
    consent: (facts) => consentPage(facts, config),
    refusal: (title, words, detail) => ({ headers: OAUTH_ERROR_HEADERS, body: oauthErrorPage(title, words, detail) }),
  };
}
