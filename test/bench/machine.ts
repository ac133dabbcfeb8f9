import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { loadavg } from 'node:os';

// How busy the machine is before a measurement: anything else running skews every figure on a
// small machine, so a bench says so up front.

export const loadLine = (): string => loadavg().map((n) => n.toFixed(2)).join(' ');

/** A count option of a bench (`--rounds 3`): a positive integer, or the run stops naming it. */
export const positive = (name: string, v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name}: expected a positive integer, got ${v}`);
  return n;
};

/** The servers a bench uses unless told otherwise. */
export const BENCH_DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
export const BENCH_REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

/** Share of all cores busy over `ms`, from /proc/stat; null where there is none. */
export async function cpuBusy(ms = 2000): Promise<number | null> {
  const sample = async () => {
    const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0] ?? '';
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    const idle = (f[3] ?? 0) + (f[4] ?? 0);
    return { idle, total: f.reduce((a, b) => a + b, 0) };
  };
  try {
    const a = await sample();
    await new Promise((r) => setTimeout(r, ms));
    const b = await sample();
    return b.total > a.total ? 1 - (b.idle - a.idle) / (b.total - a.total) : null;
  } catch {
    return null;
  }
}

/**
 * CPU time a process has used so far (user and system, its threads included), in µs, from
 * /proc/PID/stat; null where there is none. Clock ticks are taken as 100 a second, as on Linux.
 */
export function cpuMicrosOf(pid: number): number | null {
  try {
    // The command name may hold spaces: the fields are counted after its closing parenthesis.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return null;
  }
}
