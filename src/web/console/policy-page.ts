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

export function policyMain(d: PolicyPageData): Html {
  const e = d.explainForm;
  const sel = (name: string, values: string[]) => html`<select id="x-${name}" name="${name}">${values.map((v) => html`<option${e[name] === v ? html` selected` : false}>${v}</option>`)}</select>`;
  return html`<div class="wide"></div><h1>Policy</h1>
<section class="panel" aria-labelledby="live-title">
<h2 id="live-title">Live version</h2>
${d.live ? html`<p>Version <strong>${d.live.version}</strong>: “${d.live.message ?? ''}”, applied by ${d.live.appliedBy} at ${dateTime(d.live.appliedAt)}.</p>
${(['model', 'policy', 'scopes'] as const).map((t) => html`<details><summary>${t} text</summary><pre class="policy-text">${d.live!.texts[t]}</pre></details>`)}` : html`<p>No version is stored: the files are live.</p>`}
</section>
<section class="panel" aria-labelledby="shadow-title">
<h2 id="shadow-title">Shadow candidate</h2>
${d.shadow.candidate ? html`<p>Candidate <strong>#${d.shadow.candidate.id}</strong>: “${d.shadow.candidate.message ?? ''}”, by ${d.shadow.candidate.createdBy} at ${dateTime(d.shadow.candidate.createdAt)}.</p>
${d.shadow.divergences.length === 0 ? html`<p>It has decided no live request differently so far.</p>` : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Divergences, scrolls sideways on a narrow screen"><table><caption>Live requests it would decide differently</caption>
<thead><tr><th scope="col">Outcome</th><th scope="col">Requests</th><th scope="col">Live rule</th><th scope="col">Candidate rule</th><th scope="col">Example</th></tr></thead>
<tbody>${d.shadow.divergences.map((v) => html`<tr><td>${v.outcome}</td><td>${v.count}</td><td><code>${v.liveRule}</code></td><td><code>${v.shadowRule}</code></td><td><code>${Object.entries(v.example).map(([k, x]) => `${k}=${x}`).join(' ')}</code></td></tr>`)}</tbody></table></div>`}
<p>${confirmLink('/admin/policy/promote', 'Promote', { title: `Promote candidate #${d.shadow.candidate.id}?`, text: `“${d.shadow.candidate.message ?? ''}” becomes the live policy on every instance.`, go: 'Promote', danger: true })}
${confirmLink('/admin/policy/drop', 'Drop', { title: `Drop candidate #${d.shadow.candidate.id}?`, text: 'Its divergence report is discarded.', go: 'Drop', danger: true })}</p>` : html`<p class="muted">No shadow candidate. Start one with <code>keygate policy apply --shadow</code>.</p>`}
</section>
<section class="panel" aria-labelledby="history-title">
<h2 id="history-title">History</h2>
<ul class="history">${d.versions.map((v) => html`<li><p><strong>Version ${v.version}</strong>: “${v.message ?? ''}”, by ${v.appliedBy} at ${dateTime(v.appliedAt)}
${versionAction(v, d)}</p>
${changesOf(v.version, d.changes.get(v.version))}</li>`)}</ul>
</section>
<section class="panel" aria-labelledby="explain-title">
<h2 id="explain-title">Explain a decision</h2>
<form class="filters" method="get" action="/admin/policy#explain-title">
<div class="field"><label for="x-method">Method</label>${sel('method', ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'])}</div>
<div class="field"><label for="x-path">Path</label><input id="x-path" name="path" type="text" value="${e.path ?? '/api/'}" required></div>
<div class="field"><label for="x-subject">Caller</label>${sel('subject', ['anonymous', 'session', 'key', 'oauth'])}</div>
<div class="field"><label for="x-role">Role</label>${sel('role', ['user', 'admin'])}</div>
<div class="field"><label for="x-permissions">Permissions (space-separated)</label><input id="x-permissions" name="permissions" type="text" value="${e.permissions ?? ''}"></div>
<button type="submit" class="primary">Explain</button>
</form>
${d.explained === null ? false : 'error' in d.explained ? html`<p class="form-error" role="alert">${d.explained.error}</p>` : html`<div role="status" class="explained">
<p><span class="decision-${d.explained.decision}">${d.explained.decision}</span> for ${d.explained.method} ${d.explained.path} under version ${d.explained.policyVersion}.</p>
<p>Decided by: ${d.explained.decidedBy ? html`<code>${d.explained.decidedBy.text}</code> (line ${d.explained.decidedBy.line})` : 'no line allows it (refused by default)'}</p>
${d.explained.requiredPermission ? html`<p>Would open it: a key holding <code>${d.explained.requiredPermission}</code>.</p>` : false}
${d.explained.alsoMatched.length ? html`<p>Also matched: ${d.explained.alsoMatched.map((r) => html`<code>${r.text}</code> `)}</p>` : false}
</div>`}
</section>`;
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
  return confirmLink(`/admin/policy/rollback-${v.version}`, label, { title: `${label}?`, text: `Its texts, “${v.message ?? ''}”, become live again as a new version on every instance.`, go: label, danger: true, message: true });
}

function changesOf(version: number, c: PolicyPageData['changes'] extends Map<number, infer C> ? C | undefined : never): Html | false {
  if (!c) return html`<p class="muted">The decisions version ${version} changed are being worked out; reload the page in a moment.</p>`;
  if (c.against === null) return false;
  if (c.decisions.length === 0) return html`<p class="muted">No decision changed against version ${c.against}.</p>`;
  return html`<details><summary>${c.changed} decisions changed against version ${c.against}</summary><ul>${c.decisions.map((x) => html`<li><code>${x.request}</code> for ${x.subjects.join(', ')}: ${x.before} → ${x.after}</li>`)}</ul></details>`;
}
