import { axisTicks } from '../chart-axis.ts';
import { el } from './dom.ts';

// A key's last 30 days as a small bar chart. Plain SVG rather than a chart library: thirty bars are
// a few lines, it needs no script or style from elsewhere (the page's CSP allows neither inline
// style nor other origins), and the text equivalent below carries the numbers for everyone, so
// the drawing itself is hidden from assistive technology.

export interface UsageDay { date: string; requests: number; refused: number }

const SVG = 'http://www.w3.org/2000/svg';
const WIDTH = 240;
const HEIGHT = 36;
/** The band under the bars for the dated axis (the console's chart has the same labels). */
const AXIS = 14;

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

export function usageSummary(days: UsageDay[]): string {
  const total = days.reduce((n, d) => n + d.requests, 0);
  const refused = days.reduce((n, d) => n + d.refused, 0);
  const requests = `${total.toLocaleString('en')} ${total === 1 ? 'request' : 'requests'} in the last ${days.length} days`;
  return refused ? `${requests}, ${refused.toLocaleString('en')} refused over the daily quota` : requests;
}

export function usageChart(days: UsageDay[], note: string | null = null): HTMLElement {
  const max = Math.max(1, ...days.map((d) => d.requests));
  const step = WIDTH / days.length;
  const drawing = svg('svg', {
    viewBox: `0 0 ${WIDTH} ${HEIGHT + AXIS}`, width: WIDTH, height: HEIGHT + AXIS,
    'aria-hidden': 'true', focusable: 'false', class: 'usage-bars',
  });
  drawing.append(svg('line', { x1: 0, y1: HEIGHT + 0.5, x2: WIDTH, y2: HEIGHT + 0.5, class: 'axis' }));
  // 9px labels (styles.css): 6 units a character leaves room to spare for "26 Nov".
  for (const t of axisTicks(days.map((d) => d.date), { left: 0, right: WIDTH, charWidth: 6 })) {
    drawing.append(svg('line', { x1: t.x.toFixed(2), y1: HEIGHT, x2: t.x.toFixed(2), y2: HEIGHT + 3, class: 'axis' }));
    const label = svg('text', { x: t.labelX.toFixed(2), y: HEIGHT + AXIS - 2, 'text-anchor': t.anchor, class: 'tick' });
    label.textContent = t.label;
    drawing.append(label);
  }
  days.forEach((d, i) => {
    const served = d.requests - d.refused;
    const h = (n: number) => (n === 0 ? 0 : Math.max(1, (n / max) * HEIGHT));
    const x = (i * step + 0.5).toFixed(2);
    const w = Math.max(1, step - 1).toFixed(2);
    const servedH = h(served);
    const refusedH = h(d.refused);
    drawing.append(svg('rect', { x, y: (HEIGHT - servedH).toFixed(2), width: w, height: servedH.toFixed(2), class: 'bar' }));
    if (refusedH) {
      const y = (HEIGHT - servedH - refusedH).toFixed(2);
      drawing.append(svg('rect', { x, y, width: w, height: refusedH.toFixed(2), class: 'bar-refused' }));
    }
  });
  const caption = el('figcaption', { class: 'usage-text' }, usageSummary(days));
  if (note) caption.append(el('span', { class: 'usage-note' }, note));
  return el('figure', { class: 'usage' }, drawing, caption);
}
