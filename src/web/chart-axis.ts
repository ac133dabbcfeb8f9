// The dated axis under a usage chart, shared by the console's server-rendered SVG and the
// Settings → Developers chart drawn in the browser: no DOM and no Node here, plain arithmetic.

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** "12 Mar" from "2025-03-12": the axis is in UTC days, as the figures are. */
export const shortDate = (iso: string) => `${Number(iso.slice(8, 10))} ${MONTHS[Number(iso.slice(5, 7)) - 1] ?? ''}`;

/** Every seventh day is labelled, counting back from the last, so today always has a label. */
export const labelledDays = (n: number): number[] => Array.from({ length: n }, (_, i) => i).filter((i) => (n - 1 - i) % 7 === 0);

export interface AxisTick { x: number; label: string; anchor: 'start' | 'middle' | 'end'; labelX: number }

/**
 * Where each dated tick sits under bars of width `step` starting at `left`, in a drawing `right`
 * wide. A label centred under the last (or first) bar would run past the drawing's edge and be
 * cut off ("26 No"), so near an edge it is anchored to that edge instead. `charWidth` is a
 * generous estimate of one character at the tick's font size.
 */
export function axisTicks(dates: string[], g: { left: number; right: number; charWidth: number }): AxisTick[] {
  const step = (g.right - g.left) / Math.max(1, dates.length);
  return labelledDays(dates.length).map((i) => {
    const label = shortDate(dates[i]!);
    const x = g.left + i * step + step / 2;
    const half = (label.length * g.charWidth) / 2;
    // One unit in from the edge: a glyph's box runs a little past its advance.
    if (x + half > g.right) return { x, label, anchor: 'end', labelX: g.right - 1 };
    if (x - half < g.left) return { x, label, anchor: 'start', labelX: g.left + 1 };
    return { x, label, anchor: 'middle', labelX: x };
  });
}
