// Where the sign-in page may send a person once they are signed in: back to an OAuth consent step,
// or to a page of the operator console. Anything else is ignored, so `?next=` can never bounce
// someone to an address of an attacker's choosing. Shared by the server (a visitor already signed
// in is redirected at once) and the sign-in page's script.

const CONSENT = /^\/oauth\/consent\/[A-Za-z0-9_-]{1,64}$/;

/** A same-origin /admin path: no `//` (another host), no backslash (browsers read it as `/`), no control or space characters. */
function isConsolePath(next: string): boolean {
  if (next.length > 512) return false;
  if (!/^\/admin(?:[/?]|$)/.test(next)) return false;
  if (next.includes('//') || next.includes('\\')) return false;
  if (/[\u0000-\u0020\u007f-\u009f]/.test(next)) return false;
  // A percent-encoded slash or backslash could be decoded into one by a later hop.
  if (/%(?:2f|5c)/i.test(next)) return false;
  // A dot segment, plain or encoded, is resolved by the browser: `/admin/../../oauth/authorize?…` leaves the console.
  if (next.split(/[?#]/)[0]!.split('/').some((seg) => /^(?:\.|%2e){1,2}$/i.test(seg))) return false;
  return true;
}

/** The path to return to after sign-in, or null when `next` is not one this site sends people to. */
export function safeReturnPath(next: string | null | undefined): string | null {
  if (typeof next !== 'string' || next === '') return null;
  return CONSENT.test(next) || isConsolePath(next) ? next : null;
}

/** The sign-in address that returns to this console path afterwards (plain /sign-in for any other). */
export function signInFor(pathAndQuery: string): string {
  return safeReturnPath(pathAndQuery) && pathAndQuery.startsWith('/admin')
    ? `/sign-in?next=${encodeURIComponent(pathAndQuery)}`
    : '/sign-in';
}
