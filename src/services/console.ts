// The operator console's reads and actions over the policy and the fleet: each one the same call
// the command line makes (createPolicyAdmin, the one decision diff, the one explain), so the page,
// the HTTP API and `keygate policy …` cannot give different answers.
import type { Pool } from '../store/db.ts';
import { countAll, readTotalUsage, type ConsoleCounts } from '../store/console.ts';
import type { CandidateRow, VersionRow } from '../store/policy-versions.ts';
import type { PolicySubject } from '../policy/engine.ts';
import { formatRule, type PolicyRule } from '../policy/rules.ts';
import { permissionsFromNames } from '../policy/scopes.ts';
import { AppError } from '../errors.ts';
import type { Clock } from './clock.ts';
import type { RequestMeta } from './accounts.ts';
import type { Logger } from 'pino';
import { createVersionChanges, type VersionChanges } from './policy/index.ts';
import { createPolicyAdmin, explain, fleetView, readPolicyFiles, textsOf, type ApplyOutcome, type PolicyFiles } from './policy/index.ts';

export interface UsageTotals { days: { date: string; requests: number; refused: number }[] }

const versionView = (v: VersionRow) => ({
  version: v.version, sha256: v.sha256, appliedAt: v.appliedAt.toISOString(), appliedBy: v.appliedBy, message: v.message,
});
const candidateView = (c: CandidateRow) => ({
  id: c.id, sha256: c.sha256, createdAt: c.createdAt.toISOString(), createdBy: c.createdBy, message: c.message,
});
export type VersionView = ReturnType<typeof versionView>;
export type CandidateView = ReturnType<typeof candidateView>;


export interface ExplainInput {
  method: string;
  path: string;
  subject: 'anonymous' | 'session' | 'key' | 'oauth';
  role?: 'user' | 'admin';
  permissions?: string[];
}

const ruleView = (r: PolicyRule) => ({ id: r.id, line: r.line, text: formatRule(r) });

/** The UTC dates from `days - 1` days ago to today, oldest first. */
export function lastDays(now: Date, days: number): string[] {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return Array.from({ length: days }, (_, i) => new Date(today - (days - 1 - i) * 86_400_000).toISOString().slice(0, 10));
}

export type ConsoleService = ReturnType<typeof createConsoleService>;

export interface ConsoleServiceDeps { pool: Pool; clock: Clock; policyFiles: PolicyFiles; logger: Pick<Logger, 'warn'> }

export function createConsoleService({ pool, clock, policyFiles, logger }: ConsoleServiceDeps) {
  const admin = createPolicyAdmin({ pool, clock });
  const changes = createVersionChanges({
    pool,
    onError: (err, version) =>
      logger.warn({ err, version }, 'working out the decisions a policy version changed failed; the next view retries'),
  });

  async function usage(days: number): Promise<UsageTotals> {
    const dates = lastDays(clock(), days);
    const rows = new Map((await readTotalUsage(pool, dates[0]!, dates[dates.length - 1]!)).map((r) => [r.day, r]));
    return { days: dates.map((date) => ({ date, requests: rows.get(date)?.requests ?? 0, refused: rows.get(date)?.refused ?? 0 })) };
  }

  async function policy() {
    const [live, candidate] = await Promise.all([admin.versions.live(), admin.shadow.candidate()]);
    return {
      live: live ? versionView(live) : null,
      liveVersion: live?.version ?? 0,
      candidate: candidate ? candidateView(candidate) : null,
    };
  }

  return {
    admin,
    usage,
    policy,
    async fleet() {
      return fleetView(await admin.fleet());
    },
    async overview(): Promise<Awaited<ReturnType<typeof policy>> & {
      fleet: ReturnType<typeof fleetView>; counts: ConsoleCounts; usage: UsageTotals;
    }> {
      const [p, fleet, counts, u] = await Promise.all([policy(), admin.fleet(), countAll(pool, clock()), usage(30)]);
      return { ...p, fleet: fleetView(fleet), counts, usage: u };
    },
    async versions(limit = 100) {
      const rows = await admin.versions.history(limit);
      return { live: rows[0]?.version ?? 0, versions: rows.map(versionView) };
    },
    async version(n: number) {
      const v = await admin.versions.version(n);
      return { ...versionView(v), texts: textsOf(v) };
    },
    /** The decisions version `n` changed against the version before it (none before the first). */
    changes: (n: number): Promise<VersionChanges> => changes.of(n),
    /** The changes already worked out of these versions; the rest are worked out in the background. */
    keptChanges: (ns: readonly number[]) => changes.kept(ns),
    rollback: (n: number, by: { userId: string; email: string }, meta: RequestMeta, message?: string): Promise<ApplyOutcome> =>
      admin.versions.rollback(n, by.email, { actor: { userId: by.userId }, meta }, message),
    async shadow() {
      const c = await admin.shadow.candidate();
      return { candidate: c ? candidateView(c) : null, divergences: c ? await admin.shadow.divergences(c.id) : [] };
    },
    async promote(by: { userId: string; email: string }, meta: RequestMeta): Promise<ApplyOutcome> {
      const c = await admin.shadow.candidate();
      if (!c) throw new AppError('NOT_FOUND', 'There is no candidate policy to promote.');
      return admin.shadow.promote(by.email, c.id, { actor: { userId: by.userId }, meta });
    },
    drop: () => admin.shadow.off(),
    /** One decision of the live policy, as `keygate policy explain --json` words it. */
    async explain(input: ExplainInput) {
      const { engine, version } = await admin.versions.liveEngine(await readPolicyFiles(policyFiles));
      const perms = input.permissions ?? [];
      // An OAuth token is decided as a key holding its grant's scopes.
      const kind = input.subject === 'oauth' ? 'key' : input.subject;
      if (perms.length > 0 && kind !== 'key') {
        throw new AppError('VALIDATION_FAILED', 'permissions apply to a key or an OAuth token only.', {
          errors: [{ path: 'permissions', message: 'only for key or oauth' }],
        });
      }
      if (kind === 'anonymous' && input.role) {
        throw new AppError('VALIDATION_FAILED', 'A role does not apply to an anonymous caller.', {
          errors: [{ path: 'role', message: 'not for anonymous' }],
        });
      }
      const { unknown } = permissionsFromNames(engine.scopes, perms);
      if (unknown.length > 0) {
        const names = unknown.join(', ');
        throw new AppError('VALIDATION_FAILED', `Not declared in the scopes: ${names}.`, {
          errors: [{ path: 'permissions', message: `unknown: ${names}` }],
        });
      }
      const subject: PolicySubject = { kind, permissions: perms, role: kind === 'anonymous' ? null : (input.role ?? 'user') };
      const method = input.method.toUpperCase();
      const { decision: d, decidedBy, alsoMatched } = explain(engine, subject, method, input.path);
      return {
        subject: { kind: subject.kind, permissions: subject.permissions, role: subject.role },
        method,
        path: input.path,
        policyVersion: version,
        decision: d.allowed ? 'allow' as const : 'deny' as const,
        decidedBy: decidedBy ? ruleView(decidedBy) : null,
        requiredPermission: !d.allowed && subject.kind === 'key' ? (d.requiredPermission ?? null) : null,
        alsoMatched: alsoMatched.map(ruleView),
      };
    },
  };
}
