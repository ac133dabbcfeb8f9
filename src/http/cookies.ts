import type { Context } from 'koa';

export const SESSION_COOKIE = 'keygate_session';

/** HttpOnly, SameSite=Lax, and Secure whenever the request came over HTTPS (or publicUrl is https). */
export function setSessionCookie(ctx: Context, token: string, expires: Date, forceSecure: boolean): void {
  const secure = ctx.secure || forceSecure;
  if (secure) ctx.cookies.secure = true;
  ctx.cookies.set(SESSION_COOKIE, token, { httpOnly: true, sameSite: 'lax', secure, path: '/', expires, overwrite: true });
}

export function clearSessionCookie(ctx: Context): void {
  ctx.cookies.set(SESSION_COOKIE, '', { httpOnly: true, sameSite: 'lax', path: '/', expires: new Date(0), overwrite: true });
}
