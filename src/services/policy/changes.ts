// The decisions each policy version changed against the one before. Working one out asks two
// engines about every route and caller: about a second of CPU. Done on the event loop in one go,
// that second would hold up every key request of the instance, so the work is cut into slices that
// give the loop back between them, done once per version (versions never change), and kept.
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { Pool } from '../../store/db.ts';
import { findVersion } from '../../store/policy-versions.ts';
import { findVersionChanges, insertVersionChanges, type VersionChangesRow } from '../../store/policy-changes.ts';
import { decisionChanges, diffRequests, type DecisionChange } from '../../policy/decision-diff.ts';
import { AppError } from '../../errors.ts';
import { engineOfTexts, textsOf } from './versions.ts';

export type VersionChanges = VersionChangesRow & { decisions: DecisionChange[] };

/** How long one slice may hold the loop before it yields. */
const SLICE_MS = 8;

async function workOut(pool: Pool, n: number): Promise<VersionChanges> {
  const v = await findVersion(pool, n);
  if (!v) throw new AppError('NOT_FOUND', `There is no policy version ${n}.`);
  const prev = n > 0 ? await findVersion(pool, n - 1) : null;
  if (!prev) return { version: n, against: null, changed: 0, decisions: [] };
  const before = await engineOfTexts(textsOf(prev), `version ${prev.version}`);
  await yieldToLoop();
  const after = await engineOfTexts(textsOf(v), `version ${n}`);
  await yieldToLoop();
  // One request at a time gives the same entries in the same order as the whole list at once:
  // an entry is one request's change, so no two requests share one.
  const decisions: DecisionChange[] = [];
  let changed = 0;
  let sliceStart = performance.now();
  for (const r of diffRequests([before, after])) {
    const one = decisionChanges(before, after, [r]);
    decisions.push(...one.decisions);
    changed += one.changed;
    if (performance.now() - sliceStart > SLICE_MS) {
      await yieldToLoop();
      sliceStart = performance.now();
    }
  }
  return { version: n, against: prev.version, changed, decisions };
}

export interface VersionChangesService {
  /** A version's changes: kept ones at once, else worked out (in slices), kept, and answered. */
  of(n: number): Promise<VersionChanges>;
  /**
   * The kept changes of these versions, at once. The others are worked out in the background one
   * after another, so a page listing twenty new versions answers now and shows them on a later view.
   */
  kept(ns: readonly number[]): Promise<Map<number, VersionChanges>>;
}

export interface VersionChangesDeps { pool: Pool; onError: (err: unknown, version: number) => void }

export function createVersionChanges({ pool, onError }: VersionChangesDeps): VersionChangesService {
  const working = new Map<number, Promise<VersionChanges>>();
  let queue: Promise<unknown> = Promise.resolve();
  const queued = new Set<number>();

  const of = async (n: number): Promise<VersionChanges> => {
    const [stored] = await findVersionChanges(pool, [n]);
    if (stored) return stored;
    let p = working.get(n);
    if (!p) {
      p = workOut(pool, n).then(async (row) => {
        await insertVersionChanges(pool, row);
        return row;
      }).finally(() => working.delete(n));
      working.set(n, p);
    }
    return p;
  };

  return {
    of,
    async kept(ns) {
      const rows = new Map((await findVersionChanges(pool, ns)).map((r) => [r.version, r]));
      for (const n of ns) {
        if (rows.has(n) || queued.has(n)) continue;
        queued.add(n);
        queue = queue.then(() => of(n)).catch((err: unknown) => onError(err, n)).finally(() => queued.delete(n));
      }
      return rows;
    },
  };
}
