import Router from '@koa/router';
import { z } from 'zod';
import { passwordRule, type AccountService, type RequestMeta } from '../../services/accounts.ts';
import { AppError } from '../../errors.ts';
import { parseBody } from '../body.ts';
import { clearSessionCookie, setSessionCookie } from '../cookies.ts';
import type { GatewayContext, GatewayState } from '../state.ts';
import { serve, type Operation } from '../operation.ts';
import * as s from '../openapi-schemas.ts';
import { requireSessionCaller, requireUser } from './callers.ts';

export const email = z.string().trim().toLowerCase().pipe(z.email()).pipe(z.string().max(254));
/** No half of a surrogate pair alone: PostgreSQL would store it as U+FFFD, changing what was sent. */
export const wellFormed = (v: string): boolean => !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(v);
// Text that lands in the database: PostgreSQL refuses NUL, and control characters have no place in a name.
export const text = (max: number) =>
  z.string().trim().min(1).max(max).regex(/^[^\u0000-\u001f\u007f]*$/, 'must not contain control characters')
    .refine(wellFormed, 'must be well-formed Unicode');
export const signUpBody = z.object({ email, password: passwordRule, name: text(100) }).strict();
export const signInBody = z.object({
  // Looked up in PostgreSQL, which refuses NUL: a 400 that says so, not a 500.
  email: z.string().trim().max(254).regex(/^[^\u0000-\u001f\u007f]*$/, 'must not contain control characters'),
  password: z.string().max(1024),
}).strict();
export const revokeSessionBody = z.object({ sessionId: z.uuid() }).strict();
export const changePasswordBody = z.object({ currentPassword: z.string().max(1024), newPassword: passwordRule }).strict();
export const deleteUserBody = z.object({ password: z.string().max(1024) }).strict();
export const createOrgBody = z.object({
  name: text(100),
  slug: z.string().regex(/^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/, 'lowercase letters, digits and "-"'),
}).strict();
export const setActiveBody = z.object({ organizationId: z.uuid().nullable() }).strict();

export const requestMeta = (ctx: GatewayContext): RequestMeta => ({ ip: ctx.ip || null, userAgent: ctx.get('user-agent') || null });

const signOutBody = z.object({}).strict();

export const authOperations = {
  signUp: {
    method: 'post', path: '/auth/sign-up/email', tag: 'auth',
    summary: 'Create an account and sign in', body: signUpBody, ok: { status: 201, schema: s.userBody }, problems: ['EMAIL_TAKEN'],
    security: 'public',
  },
  signIn: {
    method: 'post', path: '/auth/sign-in/email', tag: 'auth',
    summary: 'Sign in', body: signInBody, ok: { status: 200, schema: s.userBody },
    problems: ['INVALID_CREDENTIALS', 'USER_BANNED', 'TOO_MANY_ATTEMPTS'], security: 'public',
  },
  signOut: {
    method: 'post', path: '/auth/sign-out', tag: 'auth',
    summary: 'Sign out', ok: { status: 204, schema: null }, security: 'session',
  },
  getSession: {
    method: 'get', path: '/auth/get-session', tag: 'auth',
    summary: 'The caller and their session or key', ok: { status: 200, schema: s.session },
  },
  listSessions: {
    method: 'get', path: '/auth/list-sessions', tag: 'auth',
    summary: "The caller's sessions", ok: { status: 200, schema: s.sessions }, security: 'session',
  },
  revokeSession: {
    method: 'post', path: '/auth/revoke-session', tag: 'auth',
    summary: 'End one of the sessions', body: revokeSessionBody, ok: { status: 204, schema: null }, problems: ['NOT_FOUND'],
    security: 'session',
  },
  changePassword: {
    method: 'post', path: '/auth/change-password', tag: 'auth',
    summary: 'Change the password', body: changePasswordBody, ok: { status: 204, schema: null }, problems: ['INVALID_CREDENTIALS'],
    security: 'session',
  },
  deleteUser: {
    method: 'post', path: '/auth/delete-user', tag: 'auth',
    summary: 'Delete the account and every key', body: deleteUserBody, ok: { status: 204, schema: null }, problems: ['INVALID_CREDENTIALS'],
    security: 'session',
  },
  createOrganization: {
    method: 'post', path: '/auth/organization/create', tag: 'auth',
    summary: 'Create an organization', body: createOrgBody, ok: { status: 201, schema: s.organizationBody }, problems: ['NOT_FOUND'],
    security: 'session',
  },
  setActiveOrganization: {
    method: 'post', path: '/auth/organization/set-active', tag: 'auth',
    summary: 'Choose the active organization', body: setActiveBody, ok: { status: 200, schema: s.activeOrganization }, security: 'session',
  },
  listOrganizations: {
    method: 'get', path: '/auth/organization/list', tag: 'auth',
    summary: "The caller's organizations", ok: { status: 200, schema: s.organizations },
  },
  activeMember: {
    method: 'get', path: '/auth/organization/get-active-member', tag: 'auth',
    summary: 'Membership in the active organization', ok: { status: 200, schema: s.member }, problems: ['NOT_FOUND'],
  },
} satisfies Record<string, Operation>;

export interface AuthRoutesDeps { accounts: AccountService; signUp: boolean; secureCookies: boolean }

/** The auth layer's account and organization endpoints. */
export function authRoutes({ accounts, signUp, secureCookies }: AuthRoutesDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });

  const ops = authOperations;
  serve(router, ops.signUp, async (ctx) => {
    if (!signUp) throw new AppError('FORBIDDEN', 'Sign-up is closed on this server. Ask an administrator for an account.');
    const body = await parseBody(ctx, signUpBody);
    const { user, token, session } = await accounts.signUp(body, requestMeta(ctx));
    setSessionCookie(ctx, token, session.expiresAt, secureCookies);
    ctx.status = 201;
    ctx.body = { user };
  });

  serve(router, ops.signIn, async (ctx) => {
    const body = await parseBody(ctx, signInBody);
    const { user, token, session } = await accounts.signIn(body, requestMeta(ctx));
    setSessionCookie(ctx, token, session.expiresAt, secureCookies);
    ctx.body = { user };
  });

  serve(router, ops.signOut, async (ctx) => {
    const caller = requireSessionCaller(ctx);
    await parseBody(ctx, signOutBody);
    await accounts.signOut(caller.token);
    clearSessionCookie(ctx);
    ctx.status = 204;
  });

  serve(router, ops.getSession, async (ctx) => {
    const caller = requireUser(ctx);
    const { id, email, name, role } = caller.user;
    const session = caller.kind === 'session'
      ? {
        id: caller.session.id, kind: 'session', userId: id,
        activeOrganizationId: caller.session.activeOrganizationId, expiresAt: caller.session.expiresAt,
      }
      : { id: caller.key.id, kind: 'key', userId: id, activeOrganizationId: null, expiresAt: caller.key.expiresAt };
    ctx.body = { session, user: { id, email, name, role } };
  });

  serve(router, ops.listSessions, async (ctx) => {
    const caller = requireSessionCaller(ctx);
    const list = await accounts.listSessions(caller.user.id);
    ctx.body = { sessions: list.map((s) => ({ ...s, current: s.id === caller.session.id })) };
  });

  serve(router, ops.revokeSession, async (ctx) => {
    const caller = requireSessionCaller(ctx);
    const { sessionId } = await parseBody(ctx, revokeSessionBody);
    await accounts.revokeSession(caller.user.id, sessionId);
    if (sessionId === caller.session.id) clearSessionCookie(ctx);
    ctx.status = 204;
  });

  serve(router, ops.changePassword, async (ctx) => {
    const caller = requireSessionCaller(ctx);
    await accounts.changePassword(caller.user.id, caller.session.id, await parseBody(ctx, changePasswordBody));
    ctx.status = 204;
  });

  serve(router, ops.deleteUser, async (ctx) => {
    const caller = requireSessionCaller(ctx);
    const { password } = await parseBody(ctx, deleteUserBody);
    await accounts.deleteUser(caller.user.id, password);
    clearSessionCookie(ctx);
    ctx.status = 204;
  });

  serve(router, ops.createOrganization, async (ctx) => {
    const caller = requireSessionCaller(ctx);
    const organization = await accounts.createOrganization(caller.user.id, caller.session.id, await parseBody(ctx, createOrgBody));
    ctx.status = 201;
    ctx.body = { organization };
  });

  serve(router, ops.setActiveOrganization, async (ctx) => {
    const caller = requireSessionCaller(ctx);
    const { organizationId } = await parseBody(ctx, setActiveBody);
    await accounts.setActiveOrganization(caller.user.id, caller.session.id, organizationId);
    ctx.body = { activeOrganizationId: organizationId };
  });

  serve(router, ops.listOrganizations, async (ctx) => {
    const caller = requireUser(ctx);
    ctx.body = { organizations: await accounts.listOrganizations(caller.user.id) };
  });

  // A key never has an active organization (it acts for its owner only).
  serve(router, ops.activeMember, async (ctx) => {
    const caller = requireUser(ctx);
    const orgId = caller.kind === 'session' ? caller.session.activeOrganizationId : null;
    const member = orgId ? await accounts.getMember(orgId, caller.user.id) : null;
    if (!member) throw new AppError('NOT_FOUND', 'There is no active organization for this caller.');
    ctx.body = { member };
  });

  return router;
}
