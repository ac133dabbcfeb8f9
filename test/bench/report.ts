// Formats the results as Markdown tables, ready to paste into test/bench/README.md, and judges each
// target: met, or missed and by how much.
import type { LookupBenchResult } from './lookup.ts';
import type { PolicyBenchResult } from './policy.ts';
import type { ShadowBenchResult, UsageTallyResult } from './shadow.ts';
import type { ServerStats } from './protocol.ts';

export interface TargetFigures {
  id: 'a' | 'b' | 'c' | 'd' | 'f' | 'g' | 'h' | 'i';
  label: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  /** requests/s of each round, in round order. */
  rounds: number[];
  /** The server's CPU time per request, median of the rounds, in µs; null where it cannot be read. */
  cpuMicros: number | null;
  stats: ServerStats | null;
  /** RSS right after the server started listening, before any request. */
  rssAtStart?: number;
}

export interface Verdict { what: string; figure: string; goal: string; met: boolean; result: string }

export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

const int = (n: number) => Math.round(n).toLocaleString('en');
const ms = (n: number) => n.toFixed(2);
const mb = (bytes: number | null | undefined) => (bytes == null ? '–' : `${Math.round(bytes / 2 ** 20)} MB`);
const pct = (n: number) => `${Math.round(n * 100)}%`;

function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

/** At least `goal`: met, or missed by the shortfall as a share of the goal. */
export function atLeast(what: string, value: number, goal: number, show: (n: number) => string): Verdict {
  const met = value >= goal;
  return { what, figure: show(value), goal: `≥ ${show(goal)}`, met, result: met ? 'met' : `missed by ${pct((goal - value) / goal)} (${show(goal - value)} short)` };
}

/** Below `goal`: met, or missed by how far over it is. */
export function below(what: string, value: number, goal: number, show: (n: number) => string): Verdict {
  const met = value < goal;
  return { what, figure: show(value), goal: `< ${show(goal)}`, met, result: met ? 'met' : `missed: ${show(value - goal)} over (${pct((value - goal) / goal)})` };
}

/** At most `goal`. */
export function atMost(what: string, value: number, goal: number, show: (n: number) => string): Verdict {
  const met = value <= goal;
  return { what, figure: show(value), goal: `≤ ${show(goal)}`, met, result: met ? 'met' : `missed: ${show(value - goal)} over (${pct((value - goal) / goal)})` };
}

export function httpTable(targets: readonly TargetFigures[]): string {
  return table(
    ['Target', 'req/s (median)', 'p50 ms', 'p99 ms', 'req/s per round', 'RSS at start', 'peak RSS', 'RSS after'],
    targets.map((t) => [`(${t.id}) ${t.label}`, int(t.requestsPerSecond), ms(t.p50), ms(t.p99), t.rounds.map(int).join(' / '), mb(t.rssAtStart), mb(t.stats?.vmHwm ?? t.stats?.rssSampledPeak), mb(t.stats?.rssNow)]),
  );
}

export function lookupTable(r: LookupBenchResult): string {
  const us = (n: number) => `${Math.round(n)}`;
  const row = (a: LookupBenchResult['small']) => [
    a.rows.toLocaleString('en'), us(a.hits.p50), us(a.hits.p99), us(a.misses.p50), us(a.misses.p99),
    `${a.planMicros.toFixed(0)} + ${a.serverMicros.toFixed(0)}`, `${a.pages.toFixed(1)} (${a.pagesRead.toFixed(1)} read)`,
  ];
  return table(['Stored keys', 'hit p50 µs', 'hit p99 µs', 'miss p50 µs', 'miss p99 µs', 'in server µs (plan + run)', 'pages per hit'], [row(r.small), row(r.large)]);
}

export function policyLine(p: PolicyBenchResult): string {
  return `${p.calls.toLocaleString('en')} decisions over ${p.distinct} distinct requests (${pct(p.allowedShare)} allowed): ` +
    `${p.amortizedMicros.toFixed(3)} µs each amortized; a first, uncached decision ${p.coldMicros.toFixed(0)} µs`;
}

/** The shadow line: the candidate's cost over the same mix, judged against 1 µs. */
export function shadowLine(s: ShadowBenchResult): string {
  const extra = s.shadowMicros - s.plainMicros;
  return `shadow evaluation: ${extra.toFixed(3)} µs amortized over the same request mix (target < 1 µs extra): ${extra < 1 ? 'met' : 'missed'}${extra < 0 ? ' (below zero: noise)' : ''}. ` +
    `Per decision, median of the rounds, ${s.calls.toLocaleString('en')} calls each: engine alone ${s.plainMicros.toFixed(3)} µs, ` +
    `counted by the observer without a candidate ${s.observedMicros.toFixed(3)} µs, with a candidate ${s.shadowMicros.toFixed(3)} µs (${pct(s.divergentShare)} of calls diverged)`;
}

export function usageLine(u: UsageTallyResult): string {
  return `usage tally: ${u.micros.toFixed(3)} µs per key request (record() over ${u.keys.toLocaleString('en')} keys, ${u.calls.toLocaleString('en')} calls, in memory until the flush)`;
}

export function verdictTable(verdicts: readonly Verdict[]): string {
  return table(['Target', 'Figure', 'Goal', 'Result'], verdicts.map((v) => [v.what, v.figure, v.goal, v.result]));
}

export const ratio = (n: number) => n.toFixed(2);
export const msUnit = (n: number) => `${n.toFixed(2)} ms`;
export const usUnit = (n: number) => `${n < 10 ? n.toFixed(2) : n.toFixed(0)} µs`;
export const times = (n: number) => `${n.toFixed(2)}×`;
