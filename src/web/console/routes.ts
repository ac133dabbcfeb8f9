import Router from '@koa/router';
import type { Config } from '../../config.ts';
import { AppError } from '../../errors.ts';
import type { GatewayContext, GatewayState } from '../../http/state.ts';
import { requestMeta } from '../../http/routes/auth.ts';
import { auditFilterOf } from '../../http/routes/console.ts';
import { keyFilterOf, keyFilterQuery } from '../../http/routes/admin.ts';
import { parseQuery } from '../../http/body.ts';
import type { AccountService } from '../../services/accounts.ts';
import { AUDIT_TYPES, type AuditService } from '../../services/audit.ts';
import type { ConsoleService } from '../../services/console.ts';
import type { KeyService } from '../../services/keys/service.ts';
import type { UsageService } from '../../services/usage.ts';
import type { PolicyHolder } from '../../policy/engine.ts';
import { html } from '../layout.ts';
import { pageConfig } from '../routes.ts';
import { confirmPage, MESSAGE_LABEL, queryOf, sendConsolePage } from './frame.ts';
import { z } from 'zod';
import { auditMain, keysMain, overviewMain, usersMain } from './pages.ts';
import { policyMain, type PolicyPageData } from './policy-page.ts';
import { readForm } from '../form-body.ts';
import { theAdmin } from '../../http/admin-only.ts';
import { requireAdminPage } from './admin-pages.ts';
import { consolePageOperations } from './operations.ts';
import { serve } from '../../http/operation.ts';

// The operator console's pages. The policy lets sessions reach /admin/** and refuses
// keys and anonymous visitors (who are sent to sign in); the router's one rule (admin-pages.ts)
// checks the role, so a non-admin gets a page in words. Reads and actions are the same service calls the admin API makes. A form
// POST with a cookie from another origin never gets here: enforcePolicy refuses it first.

export interface ConsolePagesDeps {
  config: Config; policy: PolicyHolder; console: ConsoleService; accounts: AccountService; audit: AuditService; keys: KeyService;
  usage: UsageService;
}

/** A field's text; a NUL is refused as the API refuses it (storableText): PostgreSQL's text cannot hold one. */
const str = (v: unknown, max = 254) => {
  const text = typeof v === 'string' ? v.trim().slice(0, max) : '';
  if (text.includes('\u0000')) throw new AppError('VALIDATION_FAILED', 'A field holds a NUL character, which no stored text can.');
  return text;
};
/** A datetime-local field's value, read as UTC (the form says so). */
function expiryOf(v: string): Date {
  const at = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(v) ? new Date(`${v}Z`) : null;
  // Date rolls 30 February over into March; a day the calendar lacks is refused, not moved.
  if (!at || Number.isNaN(at.getTime()) || !at.toISOString().startsWith(v)) {
    throw new AppError('VALIDATION_FAILED', 'Give the new expiry as a date and time (UTC), or choose “Never expires”.');
  }
  return at;
}

const planButton = (id: string, plan: string) => {
  const action = `/admin/users/${id}/plan?plan=${encodeURIComponent(plan)}`;
  return html`<form method="post" action="${action}"><button type="submit" class="primary">Set plan ${plan}</button></form>`;
};

export function consolePages(deps: ConsolePagesDeps): Router<GatewayState> {
  const { config, console: cs, accounts, audit, keys, usage } = deps;
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  const cfg = () => pageConfig(config);

  router.use(requireAdminPage(config));
  const pages = consolePageOperations;
  const page = (title: string, current: string) => (ctx: GatewayContext, email: string, main: ReturnType<typeof html>) =>
    sendConsolePage(ctx, cfg(), { title, current, email, main });
  const back = (ctx: GatewayContext, to: string) => { ctx.status = 303; ctx.redirect(to); };

  serve(router, pages.overview, async (ctx) => {
    const a = theAdmin(ctx);
    await page('Console', '/admin')(ctx, a.email, overviewMain(await cs.overview()));
  });

  serve(router, pages.users, async (ctx) => {
    const a = theAdmin(ctx);
    const q = str(ctx.query.q);
    const res = await accounts.usersPage({ q: q || null, limit: 50, cursor: str(ctx.query.cursor, 300) || null });
    await page('Users', '/admin/users')(ctx, a.email, usersMain(res.users, q, res.nextCursor, a.id, config.defaultPlan));
  });

  // One address per action: GET asks (the page without script), POST does it.
  type UserAction = {
    title: (e: string) => string; text: string; go: string;
    run: (id: string, by: string, ctx: GatewayContext) => Promise<{ email: string } | null>;
  };
  const userActions: Record<string, UserAction> = {
    ban: {
      title: (e) => `Ban ${e}?`, text: 'Their sessions and keys stop working at once, on every instance.', go: 'Ban',
      run: (id, by, ctx) => accounts.setBanned({ id }, true, { userId: by }, requestMeta(ctx)),
    },
    unban: {
      title: (e) => `Unban ${e}?`, text: 'They can sign in again and their keys work again.', go: 'Unban',
      run: (id, by, ctx) => accounts.setBanned({ id }, false, { userId: by }, requestMeta(ctx)),
    },
    'role-admin': {
      title: (e) => `Make ${e} an admin?`, text: 'They can ban users, revoke any key and roll the policy back.', go: 'Make admin',
      run: (id, by, ctx) => accounts.setRole({ id }, 'admin', { userId: by }, requestMeta(ctx)),
    },
    'role-user': {
      title: (e) => `Make ${e} a user?`, text: 'They lose the operator console and the admin API.', go: 'Make user',
      run: (id, by, ctx) => accounts.setRole({ id }, 'user', { userId: by }, requestMeta(ctx)),
    },
    plan: {
      title: (e) => `Set the plan of ${e}`, text: 'Keys created from now on get the chosen plan\'s quota.', go: 'Set plan',
      run: async (id, by, ctx) => {
        const plan = str(ctx.query.plan, 64);
        if (!Object.hasOwn(config.plans, plan)) throw new AppError('VALIDATION_FAILED', `There is no plan "${plan}".`);
        return accounts.setPlan({ id }, plan, { userId: by }, requestMeta(ctx));
      },
    },
  };
  const userOf = async (ctx: GatewayContext) => {
    const id = str(ctx.params.id, 64);
    const action = userActions[str(ctx.params.action, 32)];
    if (!action || !Object.hasOwn(userActions, str(ctx.params.action, 32)) || !/^[0-9a-f-]{36}$/i.test(id)) {
      throw new AppError('NOT_FOUND', 'There is no such page.');
    }
    return { id, action };
  };
  serve(router, pages.askUser, async (ctx) => {
    const a = theAdmin(ctx);
    const { id, action } = await userOf(ctx);
    const u = await accounts.findUserById(id);
    if (!u) throw new AppError('NOT_FOUND', 'There is no such user.');
    const email = u.email;
    // A plan is chosen by its button: each is a form that POSTs with the plan in its address.
    const now = u.plan ?? `${config.defaultPlan} (the default)`;
    const buttons = Object.keys(config.plans).map((p) => planButton(id, p));
    const main = ctx.params.action === 'plan'
      ? html`<section class="panel"><h1>${action.title(email)}</h1><p>${action.text} Now: ${now}.</p>
<div class="actions">${buttons}<a class="button secondary" href="/admin/users">Cancel</a></div></section>`
      : confirmPage(ctx.path, { title: action.title(email), text: action.text, go: action.go, back: '/admin/users' });
    await page(action.title(email), '/admin/users')(ctx, a.email, main);
  });
  serve(router, pages.doUser, async (ctx) => {
    const a = theAdmin(ctx);
    const { id, action } = await userOf(ctx);
    const done = await action.run(id, a.id, ctx);
    if (!done || typeof done !== 'object' || !('email' in done)) throw new AppError('NOT_FOUND', 'There is no such user.');
    // Back to the list showing the user just changed, whatever page they were on.
    back(ctx, `/admin/users?q=${encodeURIComponent(String(done.email))}`);
  });

  serve(router, pages.audit, async (ctx) => {
    const a = theAdmin(ctx);
    const type = (AUDIT_TYPES as readonly string[]).includes(str(ctx.query.type)) ? str(ctx.query.type) : '';
    const day = (v: unknown) => (/^\d{4}-\d{2}-\d{2}$/.test(str(v)) && !Number.isNaN(Date.parse(`${str(v)}T00:00:00Z`)) ? str(v) : '');
    const f = { type, actor: str(ctx.query.actor), owner: str(ctx.query.owner), from: day(ctx.query.from), to: day(ctx.query.to) };
    const filter = auditFilterOf({
      type: (type || undefined) as (typeof AUDIT_TYPES)[number] | undefined, actor: f.actor, owner: f.owner,
      from: f.from || undefined, to: f.to || undefined,
    });
    const res = await audit.list({ limit: 50, cursor: str(ctx.query.cursor, 200) || null, filter });
    await page('Audit log', '/admin/audit')(ctx, a.email, auditMain(res.entries, f, AUDIT_TYPES, res.nextCursor));
  });

  serve(router, pages.keys, async (ctx) => {
    const a = theAdmin(ctx);
    // The same zod filter the admin API validates with; a bad value is a 400 problem page.
    const q = parseQuery(ctx, keyFilterQuery.omit({ limit: true }).extend({ done: z.string().max(16).optional() }));
    const f = { owner: q.owner ?? '', state: q.state ?? '', scope: q.scope ?? '', q: q.q ?? '' };
    const res = await keys.adminListKeys({ limit: 50, cursor: q.cursor ?? null, filter: keyFilterOf(q) });
    // The usage service reads live keys only (its owner route must 404 a revoked one).
    const rows = await Promise.all(res.keys.map(async (k) => ({
      key: k, days: k.revokedAt ? null : (await usage.read(null, k.id, 30)).days,
    })));
    const said = str(ctx.query.done, 16);
    const done = Object.hasOwn(doneWords, said) ? doneWords[said]! : null;
    await page('Keys', '/admin/keys')(ctx, a.email, keysMain(rows, f, res.nextCursor, done));
  });
  const doneWords: Record<string, string> = {
    revoked: 'The key is revoked: anything that sends it is refused from now on.',
    disabled: 'The key is disabled: it is refused until it is enabled again.',
    enabled: 'The key is enabled again.',
    expiry: 'The key’s expiry is changed; it is shown below.',
  };
  const keyId = (ctx: GatewayContext) => {
    const id = str(ctx.params.id, 64);
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) throw new AppError('NOT_FOUND', 'There is no such key.');
    return id;
  };
  // One address per key action, as for users: GET asks (the page without script), POST does it.
  type KeyAction = { title: string; text: string; go: string; run: (by: string, id: string, ctx: GatewayContext) => Promise<unknown> };
  const keyActions: Record<string, KeyAction> = {
    revoke: {
      title: 'Revoke this key?', text: 'Anything that sends this key stops working at once. This cannot be undone.', go: 'Revoke key',
      run: (by, id, ctx) => keys.adminRevokeKey(by, id, requestMeta(ctx)) },
    disable: { title: 'Disable this key?', text: 'It is refused until it is enabled again.', go: 'Disable key',
      run: (by, id, ctx) => keys.adminUpdateKey(by, id, { enabled: false }, requestMeta(ctx)) },
    enable: { title: 'Enable this key?', text: 'It works again, until its expiry.', go: 'Enable key',
      run: (by, id, ctx) => keys.adminUpdateKey(by, id, { enabled: true }, requestMeta(ctx)) },
  };
  const keyAction = (ctx: GatewayContext) => {
    const name = str(ctx.params.action, 16);
    if (!Object.hasOwn(keyActions, name)) throw new AppError('NOT_FOUND', 'There is no such page.');
    return { name, ...keyActions[name]! };
  };
  serve(router, pages.askKey, async (ctx) => {
    const a = theAdmin(ctx);
    const act = keyAction(ctx);
    const main = confirmPage(ctx.url, { title: act.title, text: act.text, go: act.go, back: '/admin/keys' });
    await page(act.title, '/admin/keys')(ctx, a.email, main);
  });
  // The expiry form's own address, before the confirmed actions: its fields are the question.
  serve(router, pages.keyExpiry, async (ctx) => {
    const a = theAdmin(ctx);
    const form = await readForm(ctx);
    const f = parseQuery(ctx, keyFilterQuery.omit({ limit: true, cursor: true }));
    const expiresAt = form.get('never') === '1' ? null : expiryOf(str(form.get('expiresAt'), 32));
    await keys.adminUpdateKey(a.id, keyId(ctx), { expiresAt }, requestMeta(ctx));
    back(ctx, `/admin/keys${queryOf({ owner: f.owner, state: f.state, scope: f.scope, q: f.q, done: 'expiry' })}`);
  });
  serve(router, pages.doKey, async (ctx) => {
    const a = theAdmin(ctx);
    const act = keyAction(ctx);
    await act.run(a.id, keyId(ctx), ctx);
    // Back to the list as it was filtered, saying what happened.
    const f = parseQuery(ctx, keyFilterQuery.omit({ limit: true, cursor: true }));
    back(ctx, `/admin/keys${queryOf({ owner: f.owner, state: f.state, scope: f.scope, q: f.q, done: `${act.name}d` })}`);
  });

  serve(router, pages.policy, async (ctx) => {
    const a = theAdmin(ctx);
    const [p, versions, shadow] = await Promise.all([cs.policy(), cs.versions(20), cs.shadow()]);
    const live = p.live ? await cs.version(p.live.version) : null;
    // Only changes already worked out: the rest are worked out in the background, never in this answer.
    const changes = await cs.keptChanges(versions.versions.map((v) => v.version));
    const q = ctx.query;
    const explainForm = {
      method: str(q.method, 16) || 'GET', path: str(q.path, 2048), subject: str(q.subject, 16) || 'session',
      role: str(q.role, 16) || 'user', permissions: str(q.permissions, 2000),
    };
    let explained: PolicyPageData['explained'] = null;
    if (explainForm.path) {
      try {
        const subject = (['anonymous', 'session', 'key', 'oauth'] as const).find((k) => k === explainForm.subject) ?? 'session';
        const perms = explainForm.permissions.split(/\s+/).filter(Boolean);
        explained = await cs.explain({
          method: explainForm.method, path: explainForm.path.split(/[?#]/)[0] || '/', subject,
          role: subject === 'anonymous' ? undefined : explainForm.role === 'admin' ? 'admin' : 'user',
          permissions: perms.length ? perms : undefined,
        });
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        explained = { error: err.message };
      }
    }
    const main = policyMain({ live, versions: versions.versions, changes, shadow, explainForm, explained });
    await page('Policy', '/admin/policy')(ctx, a.email, main);
  });
  const rollbackMessageField = html`<div class="field"><label for="rollback-message">${MESSAGE_LABEL}</label>
<input id="rollback-message" name="message" type="text" maxlength="500"></div>`;
  const rollbackMessage = async (ctx: GatewayContext) => str((await readForm(ctx)).get('message'), 500) || undefined;
  type Actor = { userId: string; email: string };
  const policyActions: Record<string, { title: string; go: string; run: (by: Actor, ctx: GatewayContext) => Promise<unknown> }> = {
    promote: { title: 'Promote the shadow candidate?', go: 'Promote', run: (by, ctx) => cs.promote(by, requestMeta(ctx)) },
    drop: {
      title: 'Drop the shadow candidate?', go: 'Drop',
      run: async () => {
        if (!(await cs.drop())) throw new AppError('NOT_FOUND', 'There is no candidate policy.');
      },
    },
  };
  const policyAction = (ctx: GatewayContext) => {
    const name = str(ctx.params.action, 16);
    const m = /^rollback-(0|[1-9][0-9]{0,8})$/.exec(name);
    if (m) {
      return {
        title: `Make version ${m[1]} live again?`, go: `Make version ${m[1]} live`, extra: rollbackMessageField,
        run: async (by: Actor, c: GatewayContext) => cs.rollback(Number(m[1]), by, requestMeta(c), await rollbackMessage(c)),
      };
    }
    if (!Object.hasOwn(policyActions, name)) throw new AppError('NOT_FOUND', 'There is no such page.');
    return policyActions[name]!;
  };
  serve(router, pages.askPolicy, async (ctx) => {
    const a = theAdmin(ctx);
    const act = policyAction(ctx);
    const main = confirmPage(ctx.path, {
      title: act.title, text: 'Every instance loads the result within a second.', go: act.go, back: '/admin/policy',
      extra: 'extra' in act ? act.extra : undefined,
    });
    await page('Policy', '/admin/policy')(ctx, a.email, main);
  });
  serve(router, pages.doPolicy, async (ctx) => {
    const a = theAdmin(ctx);
    await policyAction(ctx).run({ userId: a.id, email: a.email }, ctx);
    back(ctx, '/admin/policy');
  });

  return router;
}
