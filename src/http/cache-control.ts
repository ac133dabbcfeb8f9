import type { GatewayContext } from './state.ts';

// Answers that carry identity or personal data (the session and its user, key lists,
// usage, the admin lists with every user's e-mail, the audit log with addresses) must never be kept
// by a shared cache or the browser's back-forward history. Set before the route runs, so refusals
// and errors on these paths carry it too: a 401 or 404 says something about who asked as well.

/** Path families under the API prefix, compared in lower case as the policy decides them. */
export function identityPaths(apiPrefix: string): (path: string) => boolean {
  const p = apiPrefix.toLowerCase();
  const trees = [`${p}/auth`, `${p}/admin`, `${p}/oauth/grants`];
  return (path) => {
    const lower = path.toLowerCase();
    // `/api-keys*`: the list, one key, its usage and rotation; a key's plaintext is answered there.
    if (lower.startsWith(`${p}/api-keys`)) return true;
    return trees.some((t) => lower === t || lower.startsWith(t + '/'));
  };
}

export function noStoreForIdentity(apiPrefix: string) {
  const carriesIdentity = identityPaths(apiPrefix);
  return function noStoreForIdentityScreen(ctx: GatewayContext): void {
    if (carriesIdentity(ctx.path)) ctx.set('Cache-Control', 'no-store');
  };
}
