// The policy in force in this process: the files checked and seeded into an empty store, reloaded
// when an apply (versions.ts) or another instance changes it, and the holder the middleware and the
// MCP tools read the engine in force from.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { packageRoot } from '../../config.ts';
import { withTransaction, type Pool } from '../../store/db.ts';
import { countRules, lockPolicy, readStoredRules } from '../../store/casbin.ts';
import { readScopesText, writeScopesText } from '../../store/policy-scopes.ts';
import { checkBundle, type PolicyBundle, type PolicyTexts } from '../../policy/bundle.ts';
import { createPolicyEngineFromRules, type PolicyEngine, type PolicyHolder } from '../../policy/engine.ts';
import { parsePolicy, ruleToCsvRow, type PolicyRule } from '../../policy/rules.ts';
import { parseScopes, type ScopeCatalog } from '../../policy/scopes.ts';
import { findCandidate, findLiveVersion, type CandidateRow, type VersionRow } from '../../store/policy-versions.ts';
import type { DecisionObserver } from './observer.ts';
import { keepSeedAsVersionZero, signalPolicyChanged, storeSeedVersion, writeLive } from './versions.ts';
import { systemClock } from '../clock.ts';

/** `scopes` defaults to the scopes.yaml beside the policy file, else the shipped one. */
export interface PolicyFiles { model: string; file: string; scopes?: string }

export function scopesFileFor(files: PolicyFiles): string {
  if (files.scopes) return files.scopes;
  const beside = join(dirname(files.file), 'scopes.yaml');
  return existsSync(beside) ? beside : join(packageRoot, 'policies/scopes.yaml');
}

export interface PolicyServiceDeps {
  pool: Pool;
  files: PolicyFiles;
  logger?: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** How a reload reads the stored lines; a test wraps the store's to hold one read back. */
  readRules?: typeof readStoredRules;
  /** Counts decisions and evaluates the candidate policy beside the live one. */
  observer?: DecisionObserver;
}

/**
 * What this instance has in force: the live version (0: seeded from the files) and the candidate;
 * `lagReason` is set while the last attempt to load the live version failed (it then keeps
 * enforcing `version`), and says why.
 */
export interface LoadedPolicy { version: number; candidateId: number | null; lagReason: string | null }

/** How often an instance compares the live version with the one it has loaded, besides the signal. */
export const POLICY_CHECK_MS = 5_000;

export interface BootResult { seeded: boolean; differsFromFiles: boolean }

/** How long the start waits for the policy lock before it logs that it is waiting. */
export const LOCK_WAIT_TOLD_MS = 2_000;

export interface PolicyService {
  /**
   * The engine in force; the stored policy once `bootstrap` has run. Reading `holder.current`
   * before that is a programming error and throws.
   */
  readonly holder: PolicyHolder;
  readonly loaded: LoadedPolicy;
  /**
   * Writes the files into an empty store, then puts the stored policy in force. `startPool` (default:
   * the request pool) is what it reads and writes on: at start it is one without the request path's
   * deadline, since the policy lock may be held by another instance seeding or applying a large policy.
   */
  bootstrap(startPool?: Pool): Promise<BootResult>;
  /**
   * The stored policy again, read after the call: one reload at a time, a call meanwhile is served by
   * the next one. A failed reload keeps the policy in force.
   */
  reload(): Promise<void>;
  /**
   * Reloads when the live version (or candidate) differs from the one loaded, or the last load
   * failed: a lost signal or a failed reload never leaves the instance behind for longer than the
   * schedule this runs on.
   */
  check(): Promise<void>;
}

export async function readPolicyFiles(files: PolicyFiles): Promise<PolicyTexts> {
  const [model, policy, scopes] = await Promise.all([
    readFile(files.model, 'utf8'), readFile(files.file, 'utf8'), readFile(scopesFileFor(files), 'utf8'),
  ]);
  return { model, policy, scopes };
}

/** The files' texts checked: one the model cannot evaluate never reaches the store. */
const checkedFiles = (texts: PolicyTexts, source: { policy: string; scopes: string }): Promise<PolicyBundle> =>
  checkBundle(texts, { ...source, scopesFromFile: true });

/** The stored policy's lines and scopes text; null scopes when nothing was ever stored. */
export async function readStoredPolicy(
  pool: Pool,
  modelText: string,
  readRules = readStoredRules,
): Promise<{ rules: PolicyRule[]; scopes: string | null }> {
  const [rules, scopes] = await Promise.all([readRules(pool, modelText), readScopesText(pool)]);
  return { rules, scopes };
}

const canonical = (rs: readonly PolicyRule[]) => rs.map((r) => ruleToCsvRow(r).join(',')).sort().join('\n');

export function createPolicyService({ pool, files, logger, readRules = readStoredRules, observer }: PolicyServiceDeps): PolicyService {
  let engine: PolicyEngine | null = null;
  let loaded: LoadedPolicy = { version: 0, candidateId: null, lagReason: null };
  let candidate: { id: number; engine: PolicyEngine } | null = null;
  // The candidate id the last load saw, built or not: one that does not build is not reloaded for.
  let seenCandidateId: number | null = null;
  let modelText: string | null = null;
  // The files' scopes, for a store seeded before scopes were stored (it then holds none).
  let fileScopes: ScopeCatalog | null = null;
  const source = { policy: files.file, scopes: scopesFileFor(files) };
  const scopesOf = (text: string | null, what: string): ScopeCatalog => (text ? parseScopes(text, what) : fileScopes!);
  // A signal before the first read asks for a reload right after it.
  let reloadWanted = false;
  // One reload at a time. One asked for while another runs waits for it and then reads the store
  // afresh, shared by every caller who asked meanwhile: the newest state always ends in force, and
  // a build slower than the schedule that asks for reloads can never be superseded forever.
  let running: Promise<void> | null = null;
  let queued: Promise<void> | null = null;

  const holder: PolicyHolder = {
    get current(): PolicyEngine {
      if (!engine) throw new Error('the policy service has not been bootstrapped');
      return engine;
    },
    set current(next: PolicyEngine) {
      engine = next;
    },
  };

  const readState = async (on: Pool = pool) => {
    const [live, cand] = await Promise.all([findLiveVersion(on), findCandidate(on)]);
    return { live, cand };
  };

  // The live version's own model decides, so a rollback brings its model back too; a store seeded
  // from the files has no version and uses the configured model. A candidate that does not build
  // is logged and not evaluated: it must never cost the live policy.
  const build = async (
    stored: { rules: PolicyRule[]; scopes: string | null },
    live: VersionRow | null,
    cand: CandidateRow | null,
    fallbackModel: string,
  ) => {
    const storedScopes = scopesOf(stored.scopes, 'the stored scopes');
    const liveEngine = await createPolicyEngineFromRules(live?.modelText ?? fallbackModel, stored.rules, { scopes: storedScopes });
    let next = candidate && cand && candidate.id === cand.id ? candidate : null;
    if (cand && !next) {
      try {
        const scopes = scopesOf(cand.scopesText, 'the candidate scopes');
        next = { id: cand.id, engine: await createPolicyEngineFromRules(cand.modelText, parsePolicy(cand.policyText).rules, { scopes }) };
      } catch (err) {
        logger?.error({ err }, 'the candidate policy does not build; it is not evaluated');
      }
    }
    return () => {
      engine = observer ? observer.observe(liveEngine, next) : liveEngine;
      candidate = next;
      seenCandidateId = cand?.id ?? null;
      loaded = { version: live?.version ?? 0, candidateId: next?.id ?? null, lagReason: null };
    };
  };

  // A reload builds a whole new engine and swaps it in one assignment: no request is decided
  // against a half-loaded policy.
  const reloadOnce = async (text: string): Promise<void> => {
    try {
      const [state, stored] = await Promise.all([readState(), readStoredPolicy(pool, text, readRules)]);
      const swap = await build(stored, state.live, state.cand, text);
      const was = loaded.lagReason;
      swap();
      if (was !== null) logger?.warn({ version: loaded.version }, 'policy reload recovered: the live version is in force again');
      else logger?.info('policy reloaded');
    } catch (err) {
      lagging(err);
    }
  };

  const reload = (): Promise<void> => {
    if (!engine || modelText === null) {
      reloadWanted = true;
      return Promise.resolve();
    }
    const text = modelText;
    if (!running) {
      running = reloadOnce(text).finally(() => void (running = null));
      return running;
    }
    queued ??= running.then(() => {
      queued = null;
      return reload();
    });
    return queued;
  };

  // Retried every check, so the reason is logged when it changes, not on every attempt.
  const lagging = (err: unknown) => {
    const reason = err instanceof Error ? err.message : String(err);
    if (reason !== loaded.lagReason) {
      const message = `policy reload failed; keeping version ${loaded.version} in force and retrying: ${reason}`;
      logger?.error({ err, version: loaded.version }, message);
    }
    loaded = { ...loaded, lagReason: reason };
  };

  const check = async (): Promise<void> => {
    if (!engine || modelText === null) return;
    try {
      const { live, cand } = await readState();
      if (loaded.lagReason === null && (live?.version ?? 0) === loaded.version && (cand?.id ?? null) === seenCandidateId) return;
    } catch (err) {
      lagging(err);
      return;
    }
    await reload();
  };

  return {
    holder,
    get loaded() {
      return loaded;
    },
    reload,
    check,
    /**
     * Two instances starting together both see the store empty at most once: the advisory lock
     * makes the second wait and find the rows.
     */
    async bootstrap(startPool = pool) {
      const texts = await readPolicyFiles(files);
      const checked = await checkedFiles(texts, source);
      fileScopes = checked.engine.scopes;
      const seeded = await withTransaction(startPool, async (tx) => {
        // The wait has no deadline (the other instance may be applying thousands of lines), so a
        // long one is told rather than looking like a hung start.
        const tell = () => logger?.warn('waiting for the policy lock: another instance is seeding or applying the policy');
        const told = setTimeout(tell, LOCK_WAIT_TOLD_MS);
        try {
          await lockPolicy(tx);
        } finally {
          clearTimeout(told);
        }
        // A store filled before scopes were stored gets the files' scopes beside its lines.
        if ((await readScopesText(tx)) === null) await writeScopesText(tx, texts.scopes);
        if ((await countRules(tx)) > 0) {
          if (!(await findLiveVersion(tx))) await keepSeedAsVersionZero(tx, texts.model, systemClock);
          return false;
        }
        // The same write an apply makes, and the record starts here: what was seeded is version 0.
        await writeLive(tx, checked);
        await storeSeedVersion(tx, texts, systemClock);
        await signalPolicyChanged(tx);
        return true;
      });
      const [stored, state] = await Promise.all([readStoredPolicy(startPool, texts.model), readState(startPool)]);
      (await build(stored, state.live, state.cand, texts.model))();
      modelText = texts.model;
      const differsFromFiles = canonical(stored.rules) !== canonical(checked.rules) || stored.scopes !== texts.scopes;
      if (seeded) logger?.info({ file: files.file }, 'policy store was empty: applied the policy file');
      else if (differsFromFiles) {
        logger?.warn({ file: files.file }, 'the stored policy differs from the policy file; run `keygate policy apply` to use the file');
      }
      if (reloadWanted) {
        reloadWanted = false;
        await reload();
      }
      return { seeded, differsFromFiles };
    },
  };
}
