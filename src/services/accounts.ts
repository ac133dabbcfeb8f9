import type { Pool } from '../store/db.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import { withTransaction } from '../store/db.ts';
import * as users from '../store/users.ts';
import * as sessions from '../store/sessions.ts';
import * as orgs from '../store/organizations.ts';
import { type Forget, withChange } from './invalidation.ts';
import { actorOf } from './events/types.ts';
import { AppError, notFound } from '../errors.ts';
import { decoyPasswordHash, hashPassword, randomToken, sha256, verifyPassword } from './secrets.ts';
import type { Clock } from './clock.ts';
import type { SignInThrottle } from './sign-in-throttle.ts';
import { z } from 'zod';
import * as audit from '../store/audit.ts';
import { actorColumns, type AuditActor } from '../store/audit.ts';
import type { UserMatch } from '../store/users.ts';

const NO_META: RequestMeta = { ip: null, userAgent: null };


/** The one password rule: sign-up, a password change and `keygate user create` all check this. */
export const passwordRule = z.string().min(8).max(128).regex(/^[^\u0000]*$/, 'must not contain NUL');

export interface PublicUser { id: string; email: string; name: string; role: 'user' | 'admin' }
export interface SessionInfo { id: string; userId: string; activeOrganizationId: string | null; expiresAt: Date; createdAt: Date }
export interface RequestMeta { ip: string | null; userAgent: string | null }
export interface UserRecord extends PublicUser { banned: boolean; plan: string | null }

export const publicUser = (u: Pick<users.UserRow, 'id' | 'email' | 'name' | 'role'>): PublicUser =>
  ({ id: u.id, email: u.email, name: u.name, role: u.role });
const sessionInfo = (s: sessions.SessionRow): SessionInfo =>
  ({ id: s.id, userId: s.user_id, activeOrganizationId: s.active_organization_id, expiresAt: s.expires_at, createdAt: s.created_at });
const userRecord = (u: users.UserRow): UserRecord => ({ ...publicUser(u), banned: u.banned, plan: u.plan });

export interface AccountsDeps {
  pool: Pool;
  clock: Clock;
  sessionTtlDays: number;
  /** This instance's cache of verified keys, told after a change to whether a user's keys work. */
  forget?: Forget;
  /** Bounds password guesses; the gateway always sets it, the CLI signs no one in. */
  signInThrottle?: SignInThrottle;
}

export type AccountService = ReturnType<typeof createAccountService>;

export function createAccountService({ pool, clock, sessionTtlDays, forget, signInThrottle }: AccountsDeps) {
  async function startSession(userId: string, meta: RequestMeta) {
    const token = randomToken();
    const expiresAt = new Date(clock().getTime() + sessionTtlDays * 86_400_000);
    const row = await sessions.insertSession(pool, { userId, tokenHash: sha256(token), expiresAt, ip: meta.ip, userAgent: meta.userAgent });
    return { token, session: sessionInfo(row) };
  }

  return {
    async signUp(input: { email: string; password: string; name: string }, meta: RequestMeta) {
      const passwordHash = await hashPassword(input.password);
      const row = await users.insertUser(pool, { email: input.email, name: input.name, passwordHash });
      if (!row) throw new AppError('EMAIL_TAKEN', 'An account with this e-mail address already exists.');
      return { user: publicUser(row), ...(await startSession(row.id, meta)) };
    },

    async signIn(input: { email: string; password: string }, meta: RequestMeta) {
      // Counted before anything is looked up: past the limit even the right password is refused.
      const attempt = await signInThrottle?.attempt(input.email, meta.ip);
      const row = await users.findUserByEmail(pool, input.email);
      // Verify against a decoy when the e-mail is unknown: the answer and its timing are the same.
      const ok = await verifyPassword(input.password, row?.password_hash ?? (await decoyPasswordHash()));
      if (!row || !ok) throw new AppError('INVALID_CREDENTIALS', 'Wrong e-mail or password.');
      await attempt?.succeeded();
      if (row.banned) throw new AppError('USER_BANNED', 'This account has been suspended. Contact an administrator.');
      return { user: publicUser(row), ...(await startSession(row.id, meta)) };
    },

    async signOut(token: string) {
      await sessions.deleteSessionByHash(pool, sha256(token));
    },

    /** The session for a cookie token; null when unknown, expired, or the user is banned. */
    async resolveSession(token: string): Promise<{ session: SessionInfo; user: UserRecord } | null> {
      const found = await sessions.findLiveSessionByHash(pool, sha256(token), clock());
      if (!found || found.user.banned) return null;
      return { session: sessionInfo(found.session), user: userRecord(found.user) };
    },

    async listSessions(userId: string) {
      const rows = await sessions.listUserSessions(pool, userId, clock());
      return rows.map((s) => ({ ...sessionInfo(s), ip: s.ip, userAgent: s.user_agent }));
    },

    async revokeSession(userId: string, sessionId: string) {
      if (!(await sessions.deleteSession(pool, userId, sessionId))) throw notFound('session');
    },

    /** Other sessions are signed out: whoever knew the old password loses their way in. */
    async changePassword(userId: string, currentSessionId: string, input: { currentPassword: string; newPassword: string }) {
      const row = await users.findUserById(pool, userId);
      if (!row || !(await verifyPassword(input.currentPassword, row.password_hash))) {
        throw new AppError('INVALID_CREDENTIALS', 'The current password is wrong.');
      }
      await withTransaction(pool, async (tx) => {
        await users.updateUserPassword(tx, userId, await hashPassword(input.newPassword));
        await sessions.deleteOtherSessions(tx, userId, currentSessionId);
      });
    },

    /** Deleting the account deletes its sessions, memberships and keys (foreign-key cascade). */
    async deleteUser(userId: string, password: string) {
      const row = await users.findUserById(pool, userId);
      if (!row || !(await verifyPassword(password, row.password_hash))) {
        throw new AppError('INVALID_CREDENTIALS', 'The password is wrong.');
      }
      await withChange(pool, forget, async ({ tx, invalidate }) => {
        await users.deleteUser(tx, userId);
        await invalidate({ type: 'user', id: userId });
      });
    },

    /** A ban ends the user's sessions and stops their keys at once; unban lets the keys work again. Audited with the change. */
    async setBanned(target: UserMatch, banned: boolean, actor: AuditActor, meta: RequestMeta = NO_META): Promise<UserRecord> {
      const row = await withChange(pool, forget, async ({ tx, invalidate, record }) => {
        const changed = await users.setUserBannedReturning(tx, target, banned);
        if (!changed) return null;
        if (banned) await sessions.deleteUserSessions(tx, changed.id);
        await invalidate({ type: 'user', id: changed.id });
        await record({
          audit: { type: banned ? 'USER_BANNED' : 'USER_UNBANNED', ...actorColumns(actor), ownerUserId: changed.id, keyId: null, ...meta },
          event: {
            type: banned ? 'user.banned' : 'user.unbanned',
            data: { userId: changed.id, email: changed.email, actor: actorOf(actor) },
          },
        });
        return changed;
      });
      if (!row) throw notFound('user');
      return userRecord(row);
    },

    /** For the operator (CLI): no session is started, and the role and plan are set at once. */
    async createUser(input: {
      email: string; name: string; password: string; role: 'user' | 'admin'; plan: string | null;
    }): Promise<UserRecord> {
      const checked = passwordRule.safeParse(input.password);
      if (!checked.success) {
        const message = checked.error.issues[0]!.message;
        throw new AppError('VALIDATION_FAILED', `The password ${message}.`, { errors: [{ path: 'password', message }] });
      }
      const passwordHash = await hashPassword(input.password);
      const row = await withTransaction(pool, async (tx) => {
        const inserted = await users.insertUser(tx, {
          email: input.email, name: input.name, passwordHash, role: input.role, plan: input.plan,
        });
        if (inserted) {
          await audit.insertAuditEntry(tx, {
            type: 'USER_CREATED', ...actorColumns('cli'), ownerUserId: inserted.id, keyId: null, ...NO_META,
            detail: { role: inserted.role, plan: inserted.plan },
          });
        }
        return inserted;
      });
      if (!row) throw new AppError('EMAIL_TAKEN', 'An account with this e-mail address already exists.');
      return userRecord(row);
    },

    /** For the operator (CLI `user list`): every user, or those whose e-mail or name starts with `prefix`. */
    async listUsers(prefix: string | null): Promise<(UserRecord & { createdAt: Date })[]> {
      return (await users.listUsers(pool, prefix)).map((u) => ({ ...userRecord(u), createdAt: u.created_at }));
    },

    /** The console's list: by e-mail prefix, oldest first, a page at a time. */
    async usersPage(opts: { q: string | null; limit: number; cursor: string | null }) {
      const after = opts.cursor ? decodeCursor(opts.cursor) : null;
      const rows = await users.listUsersPage(pool, { emailPrefix: opts.q, limit: opts.limit + 1, after });
      const page = rows.slice(0, opts.limit);
      const last = page[page.length - 1];
      return {
        users: page.map((u) => ({ ...userRecord(u), keysHeld: u.keys_held, createdAt: u.created_at.toISOString() })),
        nextCursor: rows.length > opts.limit && last ? encodeCursor(last) : null,
      };
    },

    async findUserById(id: string): Promise<UserRecord | null> {
      const row = await users.findUserById(pool, id);
      return row ? userRecord(row) : null;
    },

    async findUserByEmail(email: string): Promise<UserRecord | null> {
      const row = await users.findUserByEmail(pool, email);
      return row ? userRecord(row) : null;
    },

    /** Running gateways drop what they cached of the user's keys, role included. Audited with the change. */
    async setRole(target: UserMatch, role: 'user' | 'admin', actor: AuditActor, meta: RequestMeta = NO_META): Promise<UserRecord | null> {
      const row = await withChange(pool, forget, async ({ tx, invalidate }) => {
        const changed = await users.setUserRole(tx, target, role);
        if (!changed) return null;
        await invalidate({ type: 'user', id: changed.id });
        await audit.insertAuditEntry(tx, {
          type: 'USER_ROLE_CHANGED', ...actorColumns(actor), ownerUserId: changed.id, keyId: null, ...meta,
          detail: { from: changed.previous, to: role },
        });
        return changed;
      });
      return row ? userRecord(row) : null;
    },

    /** Keys created from now on get the plan's quota; existing keys keep theirs. Audited with the change. */
    async setPlan(target: UserMatch, plan: string | null, actor: AuditActor, meta: RequestMeta = NO_META): Promise<UserRecord | null> {
      const row = await withTransaction(pool, async (tx) => {
        const changed = await users.setUserPlan(tx, target, plan);
        if (changed) {
          await audit.insertAuditEntry(tx, {
            type: 'USER_PLAN_CHANGED', ...actorColumns(actor), ownerUserId: changed.id, keyId: null, ...meta,
            detail: { from: changed.previous, to: plan },
          });
        }
        return changed;
      });
      return row ? userRecord(row) : null;
    },

    async setOrganizationPlan(slug: string, plan: string | null) {
      const org = await orgs.setOrganizationPlan(pool, slug, plan);
      return org ? { id: org.id, slug: org.slug, plan: org.plan } : null;
    },

    async createOrganization(userId: string, sessionId: string, input: { name: string; slug: string }) {
      return withTransaction(pool, async (tx) => {
        const org = await orgs.insertOrganization(tx, input);
        if (!org) {
          throw new AppError('VALIDATION_FAILED', 'This slug is already taken.', { errors: [{ path: 'slug', message: 'already taken' }] });
        }
        await orgs.insertMember(tx, { organizationId: org.id, userId, role: 'owner' });
        await sessions.setActiveOrganization(tx, sessionId, org.id);
        return { id: org.id, name: org.name, slug: org.slug, plan: org.plan, createdAt: org.created_at };
      });
    },

    async setActiveOrganization(userId: string, sessionId: string, organizationId: string | null) {
      if (organizationId !== null && !(await orgs.findMember(pool, organizationId, userId))) {
        throw new AppError('FORBIDDEN', 'You are not a member of this organization.');
      }
      await sessions.setActiveOrganization(pool, sessionId, organizationId);
    },

    async listOrganizations(userId: string) {
      const rows = await orgs.listUserOrganizations(pool, userId);
      return rows.map((o) => ({ id: o.id, name: o.name, slug: o.slug, role: o.role, createdAt: o.created_at }));
    },

    async getMember(organizationId: string, userId: string) {
      const m = await orgs.findMember(pool, organizationId, userId);
      return m ? { organizationId: m.organization_id, userId: m.user_id, role: m.role, createdAt: m.created_at } : null;
    },
  };
}
