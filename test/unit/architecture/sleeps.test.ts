import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

// A test that waits a fixed time for something to happen is slow when the machine is idle and
// flaky when it is busy: it asks the condition instead (test/support/until.ts). A fixed wait stays
// only where the wait is the scenario itself: a store held down for the fault's length, a client
// that takes its time, or a span in which the test proves that nothing happens. Each of those is
// listed here with its reason, at most six. The helpers in test/support/ (until's pause between
// two questions) and the bench and soak runs, which pace load on purpose, are not counted.

const root = resolve(import.meta.dirname, '../../..');
const self = relative(root, import.meta.filename);
export const MAX_SLEEPS = 6;

/** The files allowed one fixed wait each, and why the wait is the scenario. */
const ALLOWED: Record<string, string> = {
  'test/faults/support.ts': 'holdDown: a store (PostgreSQL, Redis, a replica) held down under traffic for the length of the fault',
  'test/faults/pace.ts': 'paced: fault traffic at a steady rate, so that a day of quota lasts across the fault',
  'test/integration/hostile/support.ts': 'RawSocket.trickle: a slow client pausing between the chunks of a body',
  'test/integration/hostile/slow-body-on-sign-in.test.ts': 'a quiet kept-alive connection outlives the idle time: proving no leftover timer closes it',
};

const SKIPPED = ['test/support/', 'test/bench/', 'test/soak/'];

/**
 * The fixed waits in one source: an awaited `sleep(…)`, or a promise resolved by a timer. A timer
 * that bounds a wait (rejects, kills, destroys) or paces a drip is not one; nor is `sleep` defined.
 */
export function sleepsIn(source: string): number[] {
  const timerPromise = /new Promise(?:<[^>]*>)?\(\s*\(?\s*(\w+)\s*\)?\s*=>\s*(?:void\s+)?setTimeout\(\s*(?:\1\b|\(\)\s*=>\s*\1\(\s*\))/;
  const awaitedSleep = /\bawait\s+sleep\(/;
  return source.split('\n').flatMap((line, i) =>
    !/\bconst sleep\b/.test(line) && (timerPromise.test(line) || awaitedSleep.test(line)) ? [i + 1] : []);
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : /\.[cm]?ts$/.test(e.name) ? [join(dir, e.name)] : []);
}

describe('the tests wait for conditions, not for time', () => {
  const found = filesUnder(join(root, 'test'))
    .map((f) => relative(root, f).split('\\').join('/'))
    .filter((f) => f !== self && !SKIPPED.some((s) => f.startsWith(s)))
    .flatMap((f) => sleepsIn(readFileSync(join(root, f), 'utf8')).map((line) => ({ file: f, line })));

  it(`at most ${MAX_SLEEPS} fixed waits in test/, each one listed with the reason it is the scenario`, () => {
    expect(Object.keys(ALLOWED).length, 'waits allowed').to.be.at.most(MAX_SLEEPS);
    const unlisted = found.filter((s) => !(s.file in ALLOWED)).map((s) => `${s.file}:${s.line}`);
    expect(unlisted, `fixed waits not listed (poll with test/support/until.ts instead):\n${unlisted.join('\n')}`).to.deep.equal([]);
    const perFile = new Map<string, number[]>();
    for (const s of found) perFile.set(s.file, [...(perFile.get(s.file) ?? []), s.line]);
    const twice = [...perFile].filter(([, lines]) => lines.length > 1).map(([f, lines]) => `${f}:${lines.join(',')}`);
    expect(twice, 'a listed file with more than its one wait').to.deep.equal([]);
    expect(found.length).to.be.at.most(MAX_SLEEPS);
  });

  it('every listed wait is still there (a list entry outlives no wait)', () => {
    const gone = Object.keys(ALLOWED).filter((f) => !found.some((s) => s.file === f));
    expect(gone).to.deep.equal([]);
  });

  it('counts awaited sleeps and timer promises, not bounds, drips, polls or the definition of sleep', () => {
    const waits = [
      'await sleep(4_000);',
      'await new Promise((r) => setTimeout(r, 100));',
      'await new Promise<void>((resolve) => setTimeout(resolve, 5));',
      'await new Promise((ok) => setTimeout(() => ok(), 50));',
      'await new Promise(r => setTimeout(r, 1_500));',
    ];
    for (const w of waits) expect(sleepsIn(w), w).to.deep.equal([1]);
    const not = [
      'export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));',
      'const timer = setTimeout(() => fail(new Error(`no answer within ${ms} ms`)), ms);',
      'const drip = setInterval(() => s.write(\'x\'), IDLE_MS / 3);',
      'return void setTimeout(() => res.socket?.destroy(), 20);',
      'await until(\'the upstream exchange is closed\', () => endless!.closed, 5_000);',
      'const bound = setTimeout(() => child.kill(\'SIGKILL\'), timeoutMs);',
    ];
    for (const n of not) expect(sleepsIn(n), n).to.deep.equal([]);
  });
});
