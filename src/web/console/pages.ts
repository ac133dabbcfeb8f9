import { html, type Html } from '../layout.ts';
import type { ConsoleService } from '../../services/console.ts';
import type { AuditEntryView } from '../../services/audit.ts';
import { usageFigure, type ChartDay } from './chart.ts';
import { confirmLink, dateTime, queryOf } from './frame.ts';

// The markup of the console's pages, from what the services answer (the same answers the admin
// API gives). Every page reads without script; actions are links to confirmation pages.

type Overview = Awaited<ReturnType<ConsoleService['overview']>>;

/** A cell that, where a table.stack reads as one card per row (a narrow screen), names its column. */
const cell = (label: string, content: Html | string | number) => html`<td data-label="${label}">${content}</td>`;

export function overviewMain(o: Overview): Html {
  const live = o.live
    ? html`<p>Version <strong>${o.live.version}</strong>: “${o.live.message ?? ''}”, applied by ${o.live.appliedBy}
 at ${dateTime(o.live.appliedAt)}.</p>`
    : html`<p>No version is stored: the files are live.</p>`;
  const candidate = o.candidate
    ? html`<p>Shadow candidate <strong>#${o.candidate.id}</strong>: “${o.candidate.message ?? ''}”, by ${o.candidate.createdBy}.
 <a href="/admin/policy#shadow-title">See what it would change</a>.</p>`
    : html`<p class="muted">No shadow candidate.</p>`;
  return html`<div class="wide"></div><h1>Operator console</h1>
<section class="panel" aria-labelledby="live-title">
<h2 id="live-title">Live policy</h2>
${live}
${candidate}
</section>
<section class="panel" aria-labelledby="fleet-title">
<h2 id="fleet-title">Instances seen in the last 30 s</h2>
${o.fleet.instances.length === 0 ? html`<p class="muted">None.</p>` : fleetTable(o.fleet)}
</section>
<ul class="stats" aria-label="Counts">
<li><strong>${o.counts.users}</strong> users</li>
<li><strong>${o.counts.activeKeys}</strong> active keys</li>
<li><strong>${o.counts.liveGrants}</strong> live OAuth grants</li>
</ul>
<section class="panel" aria-labelledby="traffic-title">
<h2 id="traffic-title">Traffic, last 30 days</h2>
${usageFigure(o.usage.days, 'All keys and grants')}
</section>`;
}

/**
 * Each instance is named by the first 8 characters of its id, as `keygate policy status` prints it;
 * on a phone the table stacks (table.stack), so the version it has loaded is in view.
 */
function fleetTable(fleet: Overview['fleet']): Html {
  const version = (i: Overview['fleet']['instances'][number]) => html`${i.policyVersion}${i.lagging
    ? html` <span class="lagging">lagging (live is ${fleet.liveVersion})</span>`
    : false}`;
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="Instances"><table class="stack">
<thead><tr><th scope="col">Instance</th><th scope="col">Policy version</th><th scope="col">Host</th><th scope="col">PID</th>
<th scope="col">Seen</th></tr></thead>
<tbody>${fleet.instances.map((i) => html`<tr><th scope="row"><code title="${i.instanceId}">${i.instanceId.slice(0, 8)}</code></th>
${cell('Policy version', version(i))}${cell('Host', i.host)}${cell('PID', i.pid)}${cell('Seen', dateTime(i.seenAt))}</tr>`)}</tbody>
</table></div>`;
}

export interface UserRow {
  id: string; email: string; name: string; role: 'user' | 'admin'; plan: string | null; banned: boolean; keysHeld: number; createdAt: string
}

const USER_WORDS = {
  ban: 'Their sessions and keys stop working at once, on every instance.',
  unban: 'They can sign in again and their keys work again.',
  toUser: 'They lose the operator console and the admin API.',
  toAdmin: 'They can ban users, revoke any key and roll the policy back.',
};

function userActions(u: UserRow, self: string): Html {
  if (u.id === self) return html`<span class="muted">you</span> <a class="action-link" href="/admin/users/${u.id}/plan">Set plan</a>`;
  const to = (action: string) => `/admin/users/${u.id}/${action}`;
  const ban = u.banned
    ? confirmLink(to('unban'), 'Unban', { title: `Unban ${u.email}?`, text: USER_WORDS.unban, go: 'Unban' })
    : confirmLink(to('ban'), 'Ban', { title: `Ban ${u.email}?`, text: USER_WORDS.ban, go: 'Ban', danger: true });
  const role = u.role === 'admin'
    ? confirmLink(to('role-user'), 'Make user', { title: `Make ${u.email} a user?`, text: USER_WORDS.toUser, go: 'Make user' })
    : confirmLink(to('role-admin'), 'Make admin', {
      title: `Make ${u.email} an admin?`, text: USER_WORDS.toAdmin, go: 'Make admin', danger: true,
    });
  return html`${ban}
${role}
<a class="action-link" href="${to('plan')}">Set plan</a>`;
}


function userRow(u: UserRow, self: string, defaultPlan: string): Html {
  const keysLink = html`<a href="/admin/keys${queryOf({ owner: u.email })}"
 aria-label="${u.keysHeld} keys of ${u.email}">${u.keysHeld}</a>`;
  return html`<tr><th scope="row">${u.email}</th>${cell('Name', u.name)}${cell('Role', u.role)}
${cell('Plan', u.plan ?? html`${defaultPlan} <span class="muted">(default)</span>`)}
${cell('Banned', u.banned ? html`<span class="badge bad">banned</span>` : 'no')}${cell('Keys', keysLink)}
${cell('Created', dateTime(u.createdAt))}${cell('Actions', userActions(u, self))}</tr>`;
}

export function usersMain(users: UserRow[], q: string, nextCursor: string | null, self: string, defaultPlan: string): Html {
  // On a phone the table stacks (styles.css, table.stack), so each user's actions are in view.
  const table = html`<div class="table-wrap" tabindex="0" role="region" aria-label="Users"><table class="stack">
<caption class="visually-hidden">Users</caption>
<thead><tr><th scope="col">E-mail</th><th scope="col">Name</th><th scope="col">Role</th><th scope="col">Plan</th><th scope="col">Banned</th>
<th scope="col">Keys</th><th scope="col">Created</th><th scope="col">Actions</th></tr></thead>
<tbody>${users.map((u) => userRow(u, self, defaultPlan))}</tbody>
</table></div>`;
  return html`<div class="wide"></div><h1>Users</h1>
<form class="filters" method="get" action="/admin/users" role="search">
<div class="field"><label for="q">E-mail starts with</label><input id="q" name="q" type="search" value="${q}"></div>
<button type="submit" class="secondary">Search</button>
</form>
${users.length === 0 ? html`<p>No users match.</p>` : table}
${nextCursor ? html`<p class="pager"><a href="/admin/users${queryOf({ q, cursor: nextCursor })}">Next page</a></p>` : false}`;
}

export interface KeyRow {
  id: string; name: string; start: string; state: string; permissions: Record<string, string[]>
  createdAt: string; lastUsedAt: string | null; expiresAt: string | null; owner: { email: string }; revokedAt: string | null
  rotatedFrom?: string | null; rotatedTo?: string | null
}

/** A link that finds a key by the start of its id, the filter a secret-scanning alert also needs. */
const keyLink = (id: string, text: string, state = '') =>
  html`<a href="/admin/keys${queryOf({ q: id.slice(0, 8), state })}"><code>${text}</code></a>`;

/**
 * After a rotation two keys share a name: each says which key it replaces or is replaced by, a link
 * that finds that key by its id (named by its start when it is on this page too).
 */
function rotationWords(k: KeyRow, starts: Map<string, string>): Html {
  const link = (id: string) => keyLink(id, `${starts.get(id) ?? id.slice(0, 8)}…`);
  return html`${k.rotatedFrom ? html` · replaces ${link(k.rotatedFrom)}` : false}${
    k.rotatedTo ? html` · replaced by ${link(k.rotatedTo)}` : false}`;
}

/** A plain form (no script needed): the new expiry in UTC, or never; it returns to the same filter. */
function expiryForm(k: KeyRow, f: Record<string, string>): Html {
  const id = `expiry-${k.id}`;
  return html`<form class="filters expiry-form" method="post" action="/admin/keys/${k.id}/expiry${queryOf(f)}">
<div class="field"><label for="${id}">New expiry of “${k.name}” (UTC)</label>
<input id="${id}" name="expiresAt" type="datetime-local" value="${k.expiresAt ? k.expiresAt.slice(0, 16) : ''}"></div>
<button type="submit" class="secondary">Set expiry</button>
<button type="submit" class="secondary" name="never" value="1">Never expires</button>
</form>`;
}

type KeyFilter = { owner: string; state: string; scope: string; q: string };

/** Disable or enable, then revoke: each a link to its confirmation, back to the same filter. */
function keyActions(k: KeyRow, f: KeyFilter): Html {
  const to = (action: string) => `/admin/keys/${k.id}/${action}${queryOf(f)}`;
  const toggle = k.revokedAt ? false : k.state === 'disabled'
    ? confirmLink(to('enable'), 'Enable', { title: `Enable “${k.name}”?`, text: 'It works again, until its expiry.', go: 'Enable key' })
    : confirmLink(to('disable'), 'Disable', {
      title: `Disable “${k.name}”?`, text: `It is refused until it is enabled again; ${k.owner.email} can see it is disabled.`,
      go: 'Disable key', danger: true,
    });
  const revoke = k.revokedAt ? html`Revoked ${dateTime(k.revokedAt)}` : confirmLink(to('revoke'), 'Revoke', {
    title: `Revoke “${k.name}”?`, text: `Anything that sends this key of ${k.owner.email} stops working at once. This cannot be undone.`,
    go: 'Revoke key', danger: true,
  });
  return html`<p>${toggle}
${revoke}</p>`;
}

function keyItem(k: KeyRow, days: ChartDay[] | null, f: KeyFilter, starts: Map<string, string>): Html {
  const usage = days
    ? usageFigure(days, `Key “${k.name}”`, { small: true, collapsed: true })
    : html`<p class="muted">A revoked key has no usage chart here.</p>`;
  return html`<li class="panel">
<h2>${k.name} <code>${k.start}…</code></h2>
<p>Owner ${k.owner.email} · state <strong>${k.state}</strong> · scopes ${Object.keys(k.permissions).join(', ') || 'none'}
 · created ${dateTime(k.createdAt)} · last used ${dateTime(k.lastUsedAt)}
 · expires ${k.expiresAt ? dateTime(k.expiresAt) : 'never'}${rotationWords(k, starts)}</p>
${usage}
${keyActions(k, f)}
${k.revokedAt ? false : expiryForm(k, f)}
</li>`;
}

export function keysMain(
  keys: { key: KeyRow; days: ChartDay[] | null }[], f: KeyFilter, nextCursor: string | null, done: string | null,
): Html {
  const opt = (v: string, label: string) => html`<option value="${v}"${f.state === v ? html` selected` : false}>${label}</option>`;
  const starts = new Map(keys.map(({ key }) => [key.id, key.start]));
  const states = [['', 'Any'], ['active', 'Active'], ['disabled', 'Disabled'], ['expired', 'Expired'], ['revoked', 'Revoked']] as const;
  return html`<div class="wide"></div><h1>Keys</h1>
${done ? html`<p class="notice" role="status">${done}</p>` : false}
<form class="filters" method="get" action="/admin/keys" role="search">
<div class="field"><label for="q">Key start or id</label><input id="q" name="q" type="search" value="${f.q}"
 minlength="4" maxlength="64" pattern="[A-Za-z0-9_\-]{4,64}"
 title="The start of a key as shown, such as key_AbC1, or the first characters of its id"></div>
<div class="field"><label for="owner">Owner e-mail</label><input id="owner" name="owner" type="search" value="${f.owner}"></div>
<div class="field"><label for="state">State</label>
<select id="state" name="state">${states.map(([v, label]) => opt(v, label))}</select></div>
<div class="field"><label for="scope">Scope</label><input id="scope" name="scope" type="search" value="${f.scope}"
 pattern="[a-z][a-z0-9\\-]{0,31}" title="A scope name, such as mcp"></div>
<button type="submit" class="secondary">Filter</button>
</form>
${keys.length === 0
    ? html`<p>No keys match.</p>`
    : html`<ul class="console-keys">${keys.map(({ key, days }) => keyItem(key, days, f, starts))}</ul>`}
${nextCursor ? html`<p class="pager"><a href="/admin/keys${queryOf({ ...f, cursor: nextCursor })}">Next page</a></p>` : false}`;
}

type AuditFilter = Record<'type' | 'actor' | 'owner' | 'from' | 'to', string>;

function auditRow(e: AuditEntryView): Html {
  const key = e.keyId ? keyLink(e.keyId, e.keyId.slice(0, 8), e.type === 'API_KEY_REVOKED' ? 'revoked' : '') : '—';
  return html`<tr><td>${dateTime(e.at)}</td><td>${e.type}</td><td>${e.actorEmail ?? e.actor ?? '—'}</td><td>${e.ownerEmail ?? '—'}</td>
<td>${key}</td><td>${detailOf(e)}</td></tr>`;
}

export function auditMain(entries: AuditEntryView[], f: AuditFilter, kinds: readonly string[], nextCursor: string | null): Html {
  const exp = (format: string) => `/api/admin/audit-log/export${queryOf({ format, ...f })}`;
  const kind = (k: string) => html`<option value="${k}"${f.type === k ? html` selected` : false}>${k}</option>`;
  const table = html`<div class="table-wrap" tabindex="0" role="region"
 aria-label="Audit entries, scrolls sideways on a narrow screen"><table>
<caption class="visually-hidden">Audit entries, newest first</caption>
<thead><tr><th scope="col">When</th><th scope="col">Kind</th><th scope="col">Actor</th><th scope="col">Owner</th><th scope="col">Key</th>
<th scope="col">Detail</th></tr></thead>
<tbody>${entries.map(auditRow)}</tbody>
</table></div>`;
  return html`<div class="wide"></div><h1>Audit log</h1>
<form class="filters" method="get" action="/admin/audit" role="search">
<div class="field"><label for="type">Kind</label>
<select id="type" name="type"><option value="">Any</option>${kinds.map(kind)}</select></div>
<div class="field"><label for="actor">Actor e-mail (or cli)</label><input id="actor" name="actor" type="search" value="${f.actor}"></div>
<div class="field"><label for="owner">Owner e-mail</label><input id="owner" name="owner" type="search" value="${f.owner}"></div>
<div class="field"><label for="from">From</label><input id="from" name="from" type="date" value="${f.from}"></div>
<div class="field"><label for="to">To</label><input id="to" name="to" type="date" value="${f.to}"></div>
<button type="submit" class="secondary">Filter</button>
</form>
<p>Export this filter: <a href="${exp('csv')}">CSV</a> · <a href="${exp('ndjson')}">NDJSON</a></p>
${entries.length === 0 ? html`<p>No entries match.</p>` : table}
${nextCursor ? html`<p class="pager"><a href="/admin/audit${queryOf({ ...f, cursor: nextCursor })}">Older entries</a></p>` : false}`;
}

/** An entry's detail as words a person reads: `changed enabled`, `version 3 · by ops · message …`. */
function detailOf(e: AuditEntryView): Html {
  const parts: string[] = e.changes ? [`changed ${e.changes.join(', ')}`] : [];
  for (const [k, v] of Object.entries(e.detail ?? {})) {
    if (k === 'changes') continue;
    const text = v === null || v === undefined ? 'none'
      : Array.isArray(v) ? v.map(String).join(', ')
        : typeof v === 'object' ? Object.entries(v).map(([a, b]) => `${a} ${String(b)}`).join(', ') : String(v);
    parts.push(`${k.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase()}: ${text}`);
  }
  // A rotation's entry names the new key in its own column; the key it replaced is a link here.
  const replaced = e.previousKeyId ? html`<li>replaces ${keyLink(e.previousKeyId, e.previousKeyId.slice(0, 8))}</li>` : false;
  if (parts.length === 0 && !replaced) return html``;
  return html`<ul class="detail-list">${replaced}${parts.map((p) => html`<li>${p}</li>`)}</ul>`;
}
