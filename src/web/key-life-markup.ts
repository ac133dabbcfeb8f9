import { html, type Html } from './layout.ts';

// The markup of a key's life on Settings → Developers (docs/key-life.md): the expiry choice of the
// create form and the rotation dialog. Radio groups in fieldsets, so each choice is announced with
// its question.

/** The day counts offered, those the operator's maxLifetimeDays allows. */
export const expiryDays = (max: number | null) => [7, 30, 90].filter((d) => max === null || d <= max);

export function expiryOptions(maxLifetimeDays: number | null): Html {
  const days = expiryDays(maxLifetimeDays);
  // Without a policy the safe default is still a bounded life: 90 days, or the longest allowed.
  const preselected = days.includes(90) ? 90 : days[days.length - 1];
  const radio = (value: string, label: string, checked: boolean) => html`<div class="check">
<input type="radio" id="create-expiry-${value}" name="expiry" value="${value}"${checked ? html` checked` : false}>
<label for="create-expiry-${value}">${label}</label>
</div>`;
  return html`<fieldset class="expiry" aria-describedby="create-expiry-hint">
<legend>Expires</legend>
<p class="hint" id="create-expiry-hint">${maxLifetimeDays === null
    ? 'When the key stops working. A key that expires does less harm if it leaks.'
    : html`Keys on this server stop working within ${String(maxLifetimeDays)} days.`}</p>
${maxLifetimeDays === null ? radio('never', 'No expiry', false) : false}
${days.map((d) => radio(String(d), `In ${d} days`, d === preselected))}
${radio('date', 'On a date', days.length === 0)}
<div class="field expiry-date">
<label for="create-expires-at">Date</label>
<input id="create-expires-at" name="expiresAt" type="date" aria-describedby="create-expires-at-error">
<p class="field-error" id="create-expires-at-error"></p>
</div>
</fieldset>`;
}

export function rotateDialog(): Html {
  const grace = (value: string, label: string, checked = false) => html`<div class="check">
<input type="radio" id="rotate-grace-${value}" name="grace" value="${value}"${checked ? html` checked` : false}>
<label for="rotate-grace-${value}">${label}</label>
</div>`;
  return html`<dialog id="rotate-dialog" aria-labelledby="rotate-title" aria-describedby="rotate-what">
<form method="dialog">
<h2 id="rotate-title">Rotate “<span id="rotate-name"></span>”?</h2>
<p id="rotate-what">You get a new key with the same name and access, and today's request quota of your plan. Put it where the old one
 is used; the old key keeps working for the time you choose, then stops.</p>
<fieldset>
<legend>The old key stops working</legend>
${grace('0', 'At once')}
${grace('3600', 'In 1 hour')}
${grace('86400', 'In 1 day', true)}
${grace('604800', 'In 7 days')}
</fieldset>
<div class="actions">
<button type="submit" value="cancel" class="secondary" autofocus>Cancel</button>
<button type="submit" value="rotate" class="primary">Rotate key</button>
</div>
</form>
</dialog>`;
}
