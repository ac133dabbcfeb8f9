import { html, type Html } from './layout.ts';

// The consent step of an MCP client's authorization (CONTRACT 15). Plain forms, no script: the
// decision must work even where the page's script is blocked, and each button posts to its own
// address, so a stray submit can never be read as the other answer.

/** Where the sign-in page may send a person back to: only a consent step of this server. */
export const CONSENT_RETURN = /^\/oauth\/consent\/[A-Za-z0-9_-]{1,64}$/;

export interface ConsentInput {
  uid: string;
  clientName: string;
  clientId: string;
  /** Where the client will receive the answer; shown so a person can spot an impostor. */
  redirectOrigin: string;
  email: string;
}

export function consentMain({ uid, clientName, clientId, redirectOrigin, email }: ConsentInput): Html {
  const action = (what: 'allow' | 'deny') => `/oauth/consent/${encodeURIComponent(uid)}/${what}`;
  return html`<div class="auth-grid">
<h1 class="auth-title">Connect ${clientName} to keygate?</h1>
<section class="panel" aria-labelledby="consent-title">
<h2 id="consent-title">${clientName} wants to act as you</h2>
<p>Signed in as <strong>${email}</strong>.</p>
<p>If you allow it, <strong>${clientName}</strong> may use the MCP server of this keygate as you: call its tools, read your account and key details, and spend your daily request quota. It cannot sign in to this page, manage your keys or use the rest of the API.</p>
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
