import { html, type Html } from './layout.ts';
import type { KeysPageConfig, PageScope } from './page-config.ts';
import { expiryOptions, rotateDialog } from './key-life-markup.ts';

// The markup of the pages. Everything a user sees before the first request answers is drawn here,
// so the forms are complete (and the right checkboxes present) without waiting for the script.

interface FieldInput {
  id: string;
  name: string;
  label: string;
  type: 'text' | 'email' | 'password';
  autocomplete: string;
  hint?: string;
  maxlength?: number;
  /** What the person typed, drawn again after a refused form POST (never a password). */
  value?: string;
  /** The server's words for this field after a refused form POST. */
  error?: string;
}

/** A labelled input with room for a hint and for the error the server reports for it. */
function textField({ id, name, label, type, autocomplete, hint, maxlength, value, error }: FieldInput): Html {
  const describedBy = [hint ? `${id}-hint` : '', `${id}-error`].filter(Boolean).join(' ');
  return html`<div class="field">
<label for="${id}">${label}</label>
${hint ? html`<p class="hint" id="${id}-hint">${hint}</p>` : false}
<input id="${id}" name="${name}" type="${type}" autocomplete="${autocomplete}" required aria-describedby="${describedBy}"${
  maxlength ? html` maxlength="${maxlength}"` : false}${value && type !== 'password' ? html` value="${value}"` : false}${
  error ? html` aria-invalid="true"` : false}>
<p class="field-error" id="${id}-error">${error ?? ''}</p>
</div>`;
}

const noScript = html`<noscript><p class="notice">This page needs JavaScript. Turn it on and reload the page.</p></noscript>`;

/** A refused form POST drawn again: which form, its words, the fields' words and what was typed. */
export interface SignInFormState {
  form: 'sign-in' | 'sign-up';
  error: string;
  fields: Record<string, string>;
  values: Record<string, string>;
}

/**
 * Both forms POST to the server, which answers 303 to where the person was going, or this page
 * again with the error: they work without script. With it, the script sends the same fields to the
 * API and shows the answer in place.
 */
export function signInMain(signUp: boolean, next: string | null = null, state: SignInFormState | null = null): Html {
  const on = (form: SignInFormState['form']) => (state?.form === form ? state : null);
  const field = (form: SignInFormState['form'], f: FieldInput): Html =>
    textField({ ...f, value: on(form)?.values[f.name], error: on(form)?.fields[f.name] });
  const keepNext = next ? html`<input type="hidden" name="next" value="${next}">` : false;
  return html`<div class="auth-grid">
<h1 class="auth-title">Sign in to keygate</h1>
<section class="panel" aria-labelledby="sign-in-title">
<h2 id="sign-in-title">Sign in</h2>
<form id="sign-in-form" method="post" action="/sign-in" novalidate>
${keepNext}
${field('sign-in', { id: 'sign-in-email', name: 'email', label: 'E-mail', type: 'email', autocomplete: 'username' })}
${field('sign-in', { id: 'sign-in-password', name: 'password', label: 'Password', type: 'password', autocomplete: 'current-password' })}
<p class="form-error" id="sign-in-error" role="alert">${on('sign-in')?.error ?? ''}</p>
<button type="submit" class="primary">Sign in</button>
</form>
</section>
${signUp
  ? html`<section class="panel" aria-labelledby="sign-up-title">
<h2 id="sign-up-title">Create an account</h2>
<form id="sign-up-form" method="post" action="/sign-up" novalidate>
${keepNext}
${field('sign-up', { id: 'sign-up-name', name: 'name', label: 'Name', type: 'text', autocomplete: 'name', maxlength: 100 })}
${field('sign-up', { id: 'sign-up-email', name: 'email', label: 'E-mail', type: 'email', autocomplete: 'email' })}
${field('sign-up', {
    id: 'sign-up-password', name: 'password', label: 'Password', type: 'password', autocomplete: 'new-password',
    hint: '8 to 128 characters.', maxlength: 128,
  })}
<p class="form-error" id="sign-up-error" role="alert">${on('sign-up')?.error ?? ''}</p>
<button type="submit" class="primary">Create account</button>
</form>
</section>`
  : html`<p class="panel muted">New accounts are made by an administrator on this server.</p>`}
</div>`;
}

export function accountHeader(email: string): Html {
  return html`<div class="account">
<span class="who">Signed in as <strong>${email}</strong></span>
<button type="button" id="sign-out" class="secondary small">Sign out</button>
</div>`;
}

const breadcrumb = html`<nav aria-label="Breadcrumb"><ol class="breadcrumb"><li>Settings</li>
<li><a href="/settings/developers" aria-current="page">Developers</a></li></ol></nav>`;

/** One checkbox per available scope, or per action of a scope with several; labels from scopes.yaml. */
function accessOptions(keys: KeysPageConfig): Html | false {
  const offered = keys.scopes.filter((s) => s.available);
  if (offered.length === 0) return false;
  const option = (id: string, value: string, label: string, hint: string) => html`<div class="check">
<input type="checkbox" id="${id}" name="permission" value="${value}"${hint ? html` aria-describedby="${id}-hint"` : false}>
<label for="${id}">${label}</label>
${hint ? html`<p class="hint" id="${id}-hint">${hint}</p>` : false}
</div>`;
  const single = (s: PageScope) => s.actions.length === 1 && s.actions[0] === 'access';
  // A scope declared without a description still says what it is: its name and actions.
  const hint = (s: PageScope) => s.description || `${s.name}: ${s.actions.join(', ')}`;
  return html`<fieldset class="access">
<legend>Access</legend>
${offered.map((s) => (single(s)
    ? option(`create-scope-${s.name}`, `${s.name}:access`, s.label, hint(s))
    : html`${s.actions.map((a, i) =>
      option(`create-scope-${s.name}-${a}`, `${s.name}:${a}`, `${s.label}: ${a}`, i === 0 ? hint(s) : ''))}`))}
</fieldset>`;
}

export function developersMain(keys: KeysPageConfig, apiPrefix: string): Html {
  return html`${breadcrumb}
<h1>Developers</h1>
<p class="lead">API keys let scripts and tools call this API as you. Send a key in the <code>x-api-key</code> header of a request
 to <code>${apiPrefix}/…</code>.</p>
${noScript}
<p id="page-status" class="page-status" role="status" aria-live="polite"></p>

<section class="panel" aria-labelledby="create-title">
<h2 id="create-title">Create an API key</h2>
<form id="create-form" method="post" novalidate>
${textField({
    id: 'create-name', name: 'name', label: 'Name', type: 'text', autocomplete: 'off',
    hint: 'So you can tell your keys apart, such as “CI deploys”. Up to 64 characters.', maxlength: 64,
  })}
${accessOptions(keys)}
${expiryOptions(keys.maxLifetimeDays)}
<p class="form-error" id="create-error" role="alert"></p>
<button type="submit" class="primary">Create key</button>
</form>
</section>

<section id="new-key" class="panel reveal" aria-labelledby="new-key-title" hidden>
<h2 id="new-key-title" tabindex="-1">Copy your new key now</h2>
<p class="warning"><strong>This key will not be shown again.</strong> Only a fingerprint of it is stored, so it cannot be recovered.
 If you lose it, revoke it and create a new one.</p>
<p class="key-label" id="new-key-label">Your new key, <span id="new-key-name"></span></p>
<code id="new-key-value" class="secret" aria-labelledby="new-key-label"></code>
<div class="actions">
<button type="button" id="copy-key" class="primary">Copy key</button>
<button type="button" id="dismiss-key" class="secondary">I have stored it safely</button>
</div>
<p id="copy-status" class="copy-status" role="status" aria-live="polite"></p>
</section>

<section class="keys" aria-labelledby="keys-title">
<h2 id="keys-title" tabindex="-1">Your API keys</h2>
<p id="keys-message" class="muted" role="status">Loading your keys…</p>
<ul id="keys-list" class="key-list"></ul>
</section>

<dialog id="revoke-dialog" aria-labelledby="revoke-title" aria-describedby="revoke-consequences">
<form method="dialog">
<h2 id="revoke-title">Revoke “<span id="revoke-name"></span>”?</h2>
<div id="revoke-consequences">
<p>Anything that sends this key stops working at once. This cannot be undone.</p>
<p class="warning"><strong>Automations you created keep running</strong> on their schedule after the key is revoked.
 Review your automations, and stop any you no longer trust, above all if this key leaked.</p>
</div>
<div class="actions">
<button type="submit" value="cancel" class="secondary" autofocus>Cancel</button>
<button type="submit" value="revoke" class="danger">Revoke key</button>
</div>
</form>
</dialog>
${rotateDialog()}`;
}

export function keysOffMain(): Html {
  return html`${breadcrumb}
<h1>Developers</h1>
<section class="panel" aria-labelledby="off-title">
<h2 id="off-title">API keys are turned off</h2>
<p>This server does not issue API keys, so there is nothing to create or revoke here.
 Scripts and tools cannot sign in with a key either.</p>
<p>If you need one, ask the people who run this server to turn API keys on.</p>
</section>`;
}
