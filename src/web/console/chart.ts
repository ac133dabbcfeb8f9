import { html, raw, esc, type Html } from '../layout.ts';
import { axisTicks, shortDate } from '../chart-axis.ts';

// The 30-day chart of requests and refusals, drawn on the server as inline SVG: it needs no script,
// and CSP allows it (presentation comes from classes in styles.css, never a style attribute). The
// drawing is hidden from assistive technology; the table beside it carries the same figures.

export interface ChartDay { date: string; requests: number; refused: number }

// A narrow drawing, so its 13-unit labels stay readable (about 10 px) when a phone shrinks it.
const W = 400;
const H = 140;
const AXIS = 20;
const LEFT = 32;

export { shortDate, labelledDays } from '../chart-axis.ts';

export function usageSvg(days: ChartDay[], opts: { small?: boolean } = {}): Html {
  const max = Math.max(1, ...days.map((d) => d.requests));
  const plotW = W - LEFT;
  const plotH = H - AXIS;
  const step = plotW / Math.max(1, days.length);
  const h = (n: number) => (n === 0 ? 0 : Math.max(1, (n / max) * plotH));
  const parts: string[] = [];
  parts.push(`<line class="axis" x1="${LEFT}" y1="${plotH}" x2="${W}" y2="${plotH}"/>`);
  parts.push(`<text class="tick" x="${LEFT - 4}" y="10" text-anchor="end">${max}</text>`);
  parts.push(`<text class="tick" x="${LEFT - 4}" y="${plotH}" text-anchor="end">0</text>`);
  days.forEach((d, i) => {
    const x = LEFT + i * step + 1;
    const w = Math.max(1, step - 2).toFixed(2);
    const servedH = h(d.requests - d.refused);
    const refusedH = h(d.refused);
    const rect = (cls: string, top: number, height: number) =>
      `<rect class="${cls}" x="${x.toFixed(2)}" y="${top.toFixed(2)}" width="${w}" height="${height.toFixed(2)}"/>`;
    if (servedH) parts.push(rect('bar', plotH - servedH, servedH));
    if (refusedH) parts.push(rect('bar-refused', plotH - servedH - refusedH, refusedH));
  });
  // 13-unit ticks (styles.css): 8.5 units a character is a generous width for "26 Nov".
  for (const t of axisTicks(days.map((d) => d.date), { left: LEFT, right: W, charWidth: 8.5 })) {
    parts.push(`<line class="axis" x1="${t.x.toFixed(2)}" y1="${plotH}" x2="${t.x.toFixed(2)}" y2="${plotH + 4}"/>`);
    parts.push(`<text class="tick" x="${t.labelX.toFixed(2)}" y="${H - 4}" text-anchor="${t.anchor}">${esc(t.label)}</text>`);
  }
  const cls = `console-chart${opts.small ? ' small' : ''}`;
  const attrs = `class="${cls}" viewBox="0 0 ${W} ${H}" role="presentation" aria-hidden="true" focusable="false"`;
  return raw(`<svg ${attrs}>${parts.join('')}</svg>`);
}

const total = (days: ChartDay[], f: (d: ChartDay) => number) => days.reduce((n, d) => n + f(d), 0);

/** The chart, a one-line summary, and the figures as a table (in a disclosure when `collapsed`). */
export function usageFigure(days: ChartDay[], caption: string, opts: { small?: boolean; collapsed?: boolean } = {}): Html {
  const table = html`<table class="figures">
<caption class="visually-hidden">${caption}: requests and refusals per day (UTC)</caption>
<thead><tr><th scope="col">Day (newest first)</th><th scope="col">Requests</th><th scope="col">Refused</th></tr></thead>
<tbody>${[...days].reverse().map((d) => html`<tr><th scope="row"><time datetime="${d.date}">${shortDate(d.date)}</time></th>
<td>${d.requests}</td><td>${d.refused}</td></tr>`)}</tbody>
</table>`;
  const sum = (list: ChartDay[], f: (d: ChartDay) => number) => total(list, f).toLocaleString('en');
  const span = `${days[0] ? shortDate(days[0].date) : ''} to ${days.length ? shortDate(days[days.length - 1]!.date) : ''}`;
  return html`<figure class="console-usage${opts.collapsed ? '' : ' beside'}">
${usageSvg(days, opts)}
<figcaption>${caption}: ${sum(days, (d) => d.requests)} requests, ${sum(days, (d) => d.refused)} refused, ${span} (UTC).
 <span class="legend"><span class="swatch served"></span> served <span class="swatch refused"></span> refused</span></figcaption>
${opts.collapsed
    ? html`<details><summary>Figures by day</summary>${table}</details>`
    : html`<div class="figures-wrap" tabindex="0" role="region" aria-label="${caption}: figures by day">${table}</div>`}
</figure>`;
}
