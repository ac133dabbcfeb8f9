import { html, type Html } from '../layout.ts';
import type { ConsoleService } from '../../services/console.ts';
import { confirmLink, dateTime } from './frame.ts';

// /admin/policy: what is live, how it got there, what the candidate would change, and why a
// request is decided the way it is, each from the service `keygate policy …` calls.

type Svc = ConsoleService;
export interface PolicyPageData {
  live: Awaited<ReturnType<Svc['version']>> | null;
  versions: Awaited<ReturnType<Svc['versions']>>['versions'];
  /** Changes already worked out; a version missing here is being worked out. */
  changes: Map<number, Awaited<ReturnType<Svc['changes']>>>;
  shadow: Awaited<ReturnType<Svc['shadow']>>;
  explainForm: Record<string, string>;
  explained: Awaited<ReturnType<Svc['explain']>> | { error: string } | null;
}

function liveSection(d: PolicyPageData): Html {
  const texts = (live: NonNullable<PolicyPageData['live']>) => (['model', 'policy', 'scopes'] as const)
    .map((t) => html`<details><summary>${t} text</summary><pre class="policy-text">${live.texts[t]}</pre></details>`);
  return html`<section class="panel" aria-labelledby="live-title">
<h2 id="live-title">Live version</h2>
${d.live ? html`<p>Version <strong>${d.live.version}</strong>: “${d.live.message ?? ''}”, applied by ${d.live.appliedBy}
 at ${dateTime(d.live.appliedAt)}.</p>
${texts(d.live)}` : html`<p>No version is stored: the files are live.</p>`}
</section>`;
}

function divergences(d: PolicyPageData): Html {
  if (d.shadow.divergences.length === 0) return html`<p>It has decided no live request differently so far.</p>`;
  const example = (e: Record<string, unknown>) => Object.entries(e).map(([k, x]) => `${k}=${String(x)}`).join(' ');
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="Divergences, scrolls sideways on a narrow screen"><table>
<caption>Live requests it would decide differently</caption>
<thead><tr><th scope="col">Outcome</th><th scope="col">Requests</th><th scope="col">Live rule</th><th scope="col">Candidate rule</th>
<th scope="col">Example</th></tr></thead>
<tbody>${d.shadow.divergences.map((v) => html`<tr><td>${v.outcome}</td><td>${v.count}</td><td><code>${v.liveRule}</code></td>
<td><code>${v.shadowRule}</code></td><td><code>${example(v.example)}</code></td></tr>`)}</tbody></table></div>`;
}

function shadowSection(d: PolicyPageData): Html {
  const c = d.shadow.candidate;
  const body = c
    ? html`<p>Candidate <strong>#${c.id}</strong>: “${c.message ?? ''}”, by ${c.createdBy} at ${dateTime(c.createdAt)}.</p>
${divergences(d)}
<p>${confirmLink('/admin/policy/promote', 'Promote', {
    title: `Promote candidate #${c.id}?`, text: `“${c.message ?? ''}” becomes the live policy on every instance.`,
    go: 'Promote', danger: true,
  })}
${confirmLink('/admin/policy/drop', 'Drop', {
    title: `Drop candidate #${c.id}?`, text: 'Its divergence report is discarded.', go: 'Drop', danger: true,
  })}</p>`
    : html`<p class="muted">No shadow candidate. Start one with <code>keygate policy apply --shadow</code>.</p>`;
  return html`<section class="panel" aria-labelledby="shadow-title">
<h2 id="shadow-title">Shadow candidate</h2>
${body}
</section>`;
}

function explained(d: PolicyPageData): Html | false {
  const x = d.explained;
  if (x === null) return false;
  if ('error' in x) return html`<p class="form-error" role="alert">${x.error}</p>`;
  const by = x.decidedBy ? html`<code>${x.decidedBy.text}</code> (line ${x.decidedBy.line})` : 'no line allows it (refused by default)';
  return html`<div role="status" class="explained">
<p><span class="decision-${x.decision}">${x.decision}</span> for ${x.method} ${x.path} under version ${x.policyVersion}.</p>
<p>Decided by: ${by}</p>
${x.requiredPermission ? html`<p>Would open it: a key holding <code>${x.requiredPermission}</code>.</p>` : false}
${x.alsoMatched.length ? html`<p>Also matched: ${x.alsoMatched.map((r) => html`<code>${r.text}</code> `)}</p>` : false}
</div>`;
}

function explainSection(d: PolicyPageData): Html {
  const e = d.explainForm;
  const option = (name: string) => (v: string) => html`<option${e[name] === v ? html` selected` : false}>${v}</option>`;
  const sel = (name: string, values: string[]) => html`<select id="x-${name}" name="${name}">${values.map(option(name))}</select>`;
  return html`<section class="panel" aria-labelledby="explain-title">
<h2 id="explain-title">Explain a decision</h2>
<form class="filters" method="get" action="/admin/policy#explain-title">
<div class="field"><label for="x-method">Method</label>${sel('method', ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'])}</div>
<div class="field"><label for="x-path">Path</label><input id="x-path" name="path" type="text" value="${e.path ?? '/api/'}" required></div>
<div class="field"><label for="x-subject">Caller</label>${sel('subject', ['anonymous', 'session', 'key', 'oauth'])}</div>
<div class="field"><label for="x-role">Role</label>${sel('role', ['user', 'admin'])}</div>
<div class="field"><label for="x-permissions">Permissions (space-separated)</label>
<input id="x-permissions" name="permissions" type="text" value="${e.permissions ?? ''}"></div>
<button type="submit" class="primary">Explain</button>
</form>
${explained(d)}
</section>`;
}

export function policyMain(d: PolicyPageData): Html {
  return html`<div class="wide"></div><h1>Policy</h1>
${liveSection(d)}
${shadowSection(d)}
<section class="panel" aria-labelledby="history-title">
<h2 id="history-title">History</h2>
<ul class="history">${d.versions.map((v) => html`<li><p><strong>Version ${v.version}</strong>: “${v.message ?? ''}”, by ${v.appliedBy}
 at ${dateTime(v.appliedAt)}
${versionAction(v, d)}</p>
${changesOf(v.version, d.changes.get(v.version))}</li>`)}</ul>
</section>
${explainSection(d)}`;
}

type VersionItem = PolicyPageData['versions'][number];

/**
 * Live texts are applied once and may come back later (a rollback stores them again), so the
 * action says which way it goes: older texts than the live ones are a roll back, newer ones a return.
 */
function versionAction(v: VersionItem, d: PolicyPageData): Html {
  const live = d.versions[0];
  if (!live || v.version === live.version) return html` <span class="badge">live</span>`;
  if (v.sha256 === live.sha256) return html` <span class="muted">(the live texts)</span>`;
  const origin = Math.min(...d.versions.filter((x) => x.sha256 === live.sha256).map((x) => x.version));
  const label = v.version < origin ? `Roll back to version ${v.version}` : `Return to version ${v.version}`;
  return confirmLink(`/admin/policy/rollback-${v.version}`, label, {
    title: `${label}?`, text: `Its texts, “${v.message ?? ''}”, become live again as a new version on every instance.`,
    go: label, danger: true, message: true,
  });
}

function changesOf(version: number, c: PolicyPageData['changes'] extends Map<number, infer C> ? C | undefined : never): Html | false {
  if (!c) return html`<p class="muted">The decisions version ${version} changed are being worked out; reload the page in a moment.</p>`;
  if (c.against === null) return false;
  if (c.decisions.length === 0) return html`<p class="muted">No decision changed against version ${c.against}.</p>`;
  const decision = (x: (typeof c.decisions)[number]) =>
    html`<li><code>${x.request}</code> for ${x.subjects.join(', ')}: ${x.before} → ${x.after}</li>`;
  return html`<details><summary>${c.changed} decisions changed against version ${c.against}</summary>
<ul>${c.decisions.map(decision)}</ul></details>`;
}
