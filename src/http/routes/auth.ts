import Router from '@koa/router';
import { z } from 'zod';
import { passwordRule, type AccountService, type RequestMeta } from '../../services/accounts.ts';
import { AppError } from '../../errors.ts';
import { parseBody } from '../body.ts';
import { clearSessionCookie, setSessionCookie } from '../cookies.ts';
import type { GatewayContext, GatewayState } from '../state.ts';
import { requireSessionCaller, requireUser } from './callers.ts';

export const email = z.string().trim().toLowerCase().pipe(z.email()).pipe(z.string().max(254));
// Text that lands in the database: PostgreSQL refuses NUL, and control characters have no place in a name.
export const text = (max: number) => z.string().trim().min(1).max(max).regex(/^[^\u0000-\u001f\u007f]*$/, 'must not contain control characters');
export const signUpBody = z.object({ email, password: passwordRule, name: text(100) }).strict();
export const signInBody = z.object({ email: z.string().trim().max(254), password: z.string().max(1024) }).strict();
export const revokeSessionBody = z.object({ sessionId: z.uuid() }).strict();
export const changePasswordBody = z.object({ currentPassword: z.string().max(1024), newPassword: passwordRule }).strict();
export const deleteUserBody = z.object({ password: z.string().max(1024) }).strict();
export const createOrgBody = z.object({ name: text(100), slug: z.string().regex(/^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/, 'lowercase letters, digits and "-"') }).strict();
export const setActiveBody = z.object({ organizationId: z.uuid().nullable() }).strict();

export const requestMeta = (ctx: GatewayContext): RequestMeta => ({ ip: ctx.ip || null, userAgent: ctx.get('user-agent') || null });

export interface AuthRoutesDeps { accounts: AccountService; signUp: boolean; secureCookies: boolean }

/** The auth layer's account and organization endpoints (CONTRACT section 4). */
export function authRoutes({ accounts, signUp, secureCookies }: AuthRoutesDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });

  router.post('/auth/sign-up/email', async (ctx) => {
    if (!signUp) throw new AppError('FORBIDDEN', 'Sign-up is closed on this server. Ask an administrator for an account.');
    const body = await parseBody(ctx, signUpBody);
    const { user, token, session } = await accounts.signUp(body, requestMeta(ctx));
    setSessionCookie(ctx, token, session.expiresAt, secureCookies);
    ctx.status = 201;
    ctx.body = { user };
  });

  router.post('/auth/sign-in/email', async (ctx) => {
    const body = await parseBody(ctx, signInBody);
    const { user, token, session } = await accounts.signIn(body, requestMeta(ctx));
    setSessionCookie(ctx, token, session.expiresAt, secureCookies);
    ctx.body = { user };
  });

  router.post('/auth/sign-out', async (ctx) => {
    const caller = requireSessionCaller(ctx);
    await parseBody(ctx, z.object({}).strict());
    await accounts.signOut(caller.token);
    clearSessionCookie(ctx);
    ctx.status = 204;
  });

  router.get('/auth/get-session', async (ctx) => {
    const caller = requireUser(ctx);
    const { id, email, name, role } = caller.user;
    ctx.body =
      caller.kind === 'session'
        ? { session: { id: caller.session.id, kind: 'session', userId: id, activeOrganizationId: caller.session.activeOrganizationId, expiresAt: caller.session.expiresAt }, user: { id, email, name, role } }
        : { session: { id: caller.key.id, kind: 'key', userId: id, activeOrganizationId: null, expiresAt: caller.key.expiresAt }, user: { id, email, name, role } };
  });

  router.get('/auth/list-sessions', async (ctx) => {
    const caller = requireSessionCaller(ctx);
    const list = await accounts.listSessions(caller.user.id);
    ctx.body = { sessions: list.map((s) => ({ ...s, current: s.id === caller.session.id })) };
  });

  router.post('/auth/revoke-session', async (ctx) => {
    const caller = requireSessionCaller(ctx);
    const { sessionId } = await parseBody(ctx, revokeSessionBody);
    await accounts.revokeSession(caller.user.id, sessionId);
    if (sessionId === caller.session.id) clearSessionCookie(ctx);
    ctx.status = 204;
  });

  router.post('/auth/change-password', async (ctx) => {
    const caller = requireSessionCaller(ctx);
    await accounts.changePassword(caller.user.id, caller.session.id, await parseBody(ctx, changePasswordBody));
    ctx.status = 204;
  });

  router.post('/auth/delete-user', async (ctx) => {
    const caller = requireSessionCaller(ctx);
    const { password } = await parseBody(ctx, deleteUserBody);
    await accounts.deleteUser(caller.user.id, password);
    clearSessionCookie(ctx);
    ctx.status = 204;
  });

  router.post('/auth/organization/create', async (ctx) => {
    const caller = requireSessionCaller(ctx);
    const organization = await accounts.createOrganization(caller.user.id, caller.session.id, await parseBody(ctx, createOrgBody));
    ctx.status = 201;
    ctx.body = { organization };
  });

  router.post('/auth/organization/set-active', async (ctx) => {
    const caller = requireSessionCaller(ctx);
    const { organizationId } = await parseBody(ctx, setActiveBody);
    await accounts.setActiveOrganization(caller.user.id, caller.session.id, organizationId);
    ctx.body = { activeOrganizationId: organizationId };
  });

  router.get('/auth/organization/list', async (ctx) => {
    const caller = requireUser(ctx);
    ctx.body = { organizations: await accounts.listOrganizations(caller.user.id) };
  });

  // A key never has an active organization (spec 5.5: it acts for its owner only).
  router.get('/auth/organization/get-active-member', async (ctx) => {
    const caller = requireUser(ctx);
    const orgId = caller.kind === 'session' ? caller.session.activeOrganizationId : null;
    const member = orgId ? await accounts.getMember(orgId, caller.user.id) : null;
    if (!member) throw new AppError('NOT_FOUND', 'There is no active organization for this caller.');
    ctx.body = { member };
  });

  return router;
}
