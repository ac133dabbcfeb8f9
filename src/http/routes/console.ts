import Router from '@koa/router';
import { z } from 'zod';
import type { AccountService } from '../../services/accounts.ts';
import type { AuditService } from '../../services/audit.ts';
import type { ConsoleService } from '../../services/console.ts';
import { AUDIT_TYPES, type AuditFilter } from '../../services/audit.ts';
import { AppError } from '../../errors.ts';
import { idParam, parseBody, parseQuery } from '../body.ts';
import { queryInt } from '../query-int.ts';
import type { GatewayContext, GatewayState } from '../state.ts';
import { serve, type Operation } from '../operation.ts';
import * as s from '../console-schemas.ts';
import { requestMeta, wellFormed } from './auth.ts';
import { requireAdmin, theAdmin } from '../admin-only.ts';

// The operator console's API. The policy keeps /api/admin/** to admin sessions, and the router's
// one rule (requireAdmin, http/admin-only.ts) says the same on its own: no handler asks again.

const versionParam = (ctx: GatewayContext): number => {
  const raw = (ctx.params as { v?: string }).v ?? '';
  if (!/^(0|[1-9][0-9]{0,8})$/.test(raw)) throw new AppError('NOT_FOUND', `There is no policy version ${raw.slice(0, 20)}.`);
  return Number(raw);
};

/**
 * Text compared with or stored beside PostgreSQL's: its text type holds no NUL, and its JSON no lone
 * surrogate, so either would fail the query (a 500, or an export cut off mid-stream) instead of
 * matching nothing or being refused.
 */
export const storableText = (max: number) => z.string().trim().max(max)
  .regex(/^[^\u0000]*$/, 'must not contain NUL')
  .refine(wellFormed, 'must be well-formed Unicode');

const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'a date, YYYY-MM-DD')
  .refine((d) => !Number.isNaN(Date.parse(`${d}T00:00:00Z`)), 'not a calendar date');

/** The audit filters the page and the export share. */
export const auditFilterQuery = z.object({
  type: z.union([z.enum(AUDIT_TYPES), z.array(z.enum(AUDIT_TYPES)).max(AUDIT_TYPES.length)]).optional(),
  actor: storableText(254).optional().describe('The acting user\'s e-mail, or `cli`'),
  owner: storableText(254).optional().describe("The owner's e-mail"),
  from: day.optional().describe('First day included (UTC)'),
  to: day.optional().describe('Last day included (UTC)'),
});

export function auditFilterOf(q: z.infer<typeof auditFilterQuery>): AuditFilter {
  const types = q.type === undefined ? undefined : Array.isArray(q.type) ? q.type : [q.type];
  return {
    types,
    actorEmail: q.actor || undefined,
    ownerEmail: q.owner || undefined,
    from: q.from ? new Date(`${q.from}T00:00:00Z`) : undefined,
    to: q.to ? new Date(Date.parse(`${q.to}T00:00:00Z`) + 86_400_000) : undefined,
  };
}

export const auditListQuery = auditFilterQuery.extend({ limit: queryInt(1, 100, 50), cursor: z.string().max(200).optional() }).strict();
const exportQuery = auditFilterQuery.extend({ format: z.enum(['csv', 'ndjson']).default('ndjson') }).strict();
const usersQuery = z.object({
  q: storableText(254).optional(), cursor: z.string().max(300).optional(), limit: queryInt(1, 100, 50),
}).strict();
const roleBody = z.object({ role: z.enum(['user', 'admin']) }).strict();
const planBody = z.object({ plan: z.string().min(1).max(64) }).strict();
const rollbackBody = z.object({
  version: z.number().int().min(0),
  message: storableText(500).optional().describe('Why; the new version\'s message (default `rollback to VERSION`)'),
}).strict();
const explainBody = z.object({
  method: z.string().regex(/^[A-Za-z]{1,16}$/),
  path: z.string().min(1).max(2048).regex(/^\/[^?#]*$/, 'a canonical path without a query string'),
  subject: z.enum(['anonymous', 'session', 'key', 'oauth']),
  role: z.enum(['user', 'admin']).optional(),
  permissions: z.array(z.string().min(1).max(128)).max(64).optional(),
}).strict();
const usageDays = z.object({ days: queryInt(1, 90, 30) }).strict();

const admin = 'admin' as const;
export const consoleOperations = {
  overview: {
    method: 'get', path: '/admin/overview', tag: 'admin', summary: 'Live policy, candidate, fleet, counts and 30 days of traffic',
    ok: { status: 200, schema: s.overview }, security: admin,
  },
  users: {
    method: 'get', path: '/admin/users', tag: 'admin', summary: 'Users by e-mail prefix, oldest first, paginated', query: usersQuery,
    ok: { status: 200, schema: s.userPage }, security: admin,
  },
  role: {
    method: 'post', path: '/admin/users/:id/role', tag: 'admin', summary: "Set a user's role (audited)", body: roleBody,
    ok: { status: 200, schema: s.userRecord }, problems: ['NOT_FOUND'], security: admin,
  },
  plan: {
    method: 'post', path: '/admin/users/:id/plan', tag: 'admin',
    summary: "Set a user's plan (audited); keys created from now on get its quota", body: planBody,
    ok: { status: 200, schema: s.userRecord }, problems: ['NOT_FOUND'], security: admin,
  },
  policy: {
    method: 'get', path: '/admin/policy', tag: 'admin', summary: 'The live policy version and the candidate',
    ok: { status: 200, schema: s.policyState }, security: admin,
  },
  versions: {
    method: 'get', path: '/admin/policy/versions', tag: 'admin', summary: 'Every stored policy version, newest first',
    ok: { status: 200, schema: s.versionList }, security: admin,
  },
  version: {
    method: 'get', path: '/admin/policy/versions/:v', tag: 'admin', summary: "A version's model, policy and scopes texts",
    ok: { status: 200, schema: s.versionTexts }, problems: ['NOT_FOUND'], security: admin,
  },
  changes: {
    method: 'get', path: '/admin/policy/versions/:v/changes', tag: 'admin',
    summary: 'The decisions a version changed against the one before', ok: { status: 200, schema: s.versionChanges },
    problems: ['NOT_FOUND'], security: admin,
  },
  rollback: {
    method: 'post', path: '/admin/policy/rollback', tag: 'admin', summary: "Make a version's texts live again as a new version (audited)",
    body: rollbackBody, ok: { status: 200, schema: s.applyOutcome }, problems: ['NOT_FOUND', 'VALIDATION_FAILED'], security: admin,
  },
  shadow: {
    method: 'get', path: '/admin/policy/shadow', tag: 'admin',
    summary: "The candidate's divergences from the live policy across the fleet", ok: { status: 200, schema: s.shadowReport },
    security: admin,
  },
  promote: {
    method: 'post', path: '/admin/policy/shadow/promote', tag: 'admin', summary: 'Make the candidate live as a new version (audited)',
    ok: { status: 200, schema: s.applyOutcome }, problems: ['NOT_FOUND'], security: admin,
  },
  drop: {
    method: 'delete', path: '/admin/policy/shadow', tag: 'admin', summary: 'Drop the candidate', ok: { status: 204, schema: null },
    problems: ['NOT_FOUND'], security: admin,
  },
  explain: {
    method: 'post', path: '/admin/policy/explain', tag: 'admin', summary: 'One decision of the live policy and the line that made it',
    body: explainBody, ok: { status: 200, schema: s.explanation }, security: admin,
  },
  fleet: {
    method: 'get', path: '/admin/fleet', tag: 'admin', summary: 'Each instance seen in the last 30 s and the version it runs',
    ok: { status: 200, schema: s.fleet }, security: admin,
  },
  usage: {
    method: 'get', path: '/admin/usage', tag: 'admin', summary: 'Daily requests and refusals across every key and grant',
    query: usageDays, ok: { status: 200, schema: s.usageTotals }, security: admin,
  },
  auditExport: {
    method: 'get', path: '/admin/audit-log/export', tag: 'admin',
    summary: 'Every audit entry matching the filter, streamed as CSV or NDJSON', query: exportQuery,
    ok: { status: 200, schema: null, contentType: 'application/x-ndjson' }, security: admin,
  },
} satisfies Record<string, Operation>;

export interface ConsoleRoutesDeps {
  console: ConsoleService; accounts: AccountService; audit: AuditService; plans: Record<string, unknown>;
}

export function consoleRoutes({ console: cs, accounts, audit, plans }: ConsoleRoutesDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  router.use(requireAdmin);
  const ops = consoleOperations;
  const by = (ctx: GatewayContext) => {
    const u = theAdmin(ctx);
    return { userId: u.id, email: u.email };
  };
  type UserOut = { id: string; email: string; name: string; role: 'user' | 'admin'; plan: string | null; banned: boolean };
  const userOut = (u: UserOut) => ({ user: { id: u.id, email: u.email, name: u.name, role: u.role, plan: u.plan, banned: u.banned } });

  serve(router, ops.overview, async (ctx) => {
    ctx.body = await cs.overview();
  });
  serve(router, ops.users, async (ctx) => {
    const q = parseQuery(ctx, usersQuery);
    ctx.body = await accounts.usersPage({ q: q.q || null, limit: q.limit, cursor: q.cursor ?? null });
  });
  serve(router, ops.role, async (ctx) => {
    const actor = by(ctx);
    const id = idParam(ctx.params, 'user');
    const { role } = await parseBody(ctx, roleBody);
    const u = await accounts.setRole({ id }, role, { userId: actor.userId }, requestMeta(ctx));
    if (!u) throw new AppError('NOT_FOUND', 'There is no such user.');
    ctx.body = userOut(u);
  });
  serve(router, ops.plan, async (ctx) => {
    const actor = by(ctx);
    const id = idParam(ctx.params, 'user');
    const { plan } = await parseBody(ctx, planBody);
    if (!Object.hasOwn(plans, plan)) {
      throw new AppError('VALIDATION_FAILED', `There is no plan "${plan}" (plans: ${Object.keys(plans).join(', ')}).`, {
        errors: [{ path: 'plan', message: 'unknown plan' }],
      });
    }
    const u = await accounts.setPlan({ id }, plan, { userId: actor.userId }, requestMeta(ctx));
    if (!u) throw new AppError('NOT_FOUND', 'There is no such user.');
    ctx.body = userOut(u);
  });
  serve(router, ops.policy, async (ctx) => {
    ctx.body = await cs.policy();
  });
  serve(router, ops.versions, async (ctx) => {
    ctx.body = await cs.versions();
  });
  serve(router, ops.version, async (ctx) => {
    ctx.body = await cs.version(versionParam(ctx));
  });
  serve(router, ops.changes, async (ctx) => {
    ctx.body = await cs.changes(versionParam(ctx));
  });
  serve(router, ops.rollback, async (ctx) => {
    const actor = by(ctx);
    const { version, message } = await parseBody(ctx, rollbackBody);
    ctx.body = await cs.rollback(version, actor, requestMeta(ctx), message);
  });
  serve(router, ops.shadow, async (ctx) => {
    ctx.body = await cs.shadow();
  });
  serve(router, ops.promote, async (ctx) => {
    ctx.body = await cs.promote(by(ctx), requestMeta(ctx));
  });
  serve(router, ops.drop, async (ctx) => {
    if (!(await cs.drop())) throw new AppError('NOT_FOUND', 'There is no candidate policy.');
    ctx.status = 204;
  });
  serve(router, ops.explain, async (ctx) => {
    ctx.body = await cs.explain(await parseBody(ctx, explainBody));
  });
  serve(router, ops.fleet, async (ctx) => {
    ctx.body = await cs.fleet();
  });
  serve(router, ops.usage, async (ctx) => {
    ctx.body = await cs.usage(parseQuery(ctx, usageDays).days);
  });
  serve(router, ops.auditExport, async (ctx) => {
    const q = parseQuery(ctx, exportQuery);
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Content-Disposition', `attachment; filename="keygate-audit.${q.format}"`);
    ctx.type = q.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8';
    ctx.body = audit.export(q.format, auditFilterOf(q));
  });

  return router;
}
