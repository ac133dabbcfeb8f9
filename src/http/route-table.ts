import type { GatewayRoute } from '../policy/routes.ts';
import type { ServedRoute } from './local-routes.ts';
import { CONTENT_PATH } from './proxy/content.ts';

// The policy's route table (src/policy/routes.ts) read off what the routers serve, in the form the
// policy asks about: written against the default prefix /api, a router's `{*rest}` as a trailing
// `*`, a route that answers every method as ALL, and HEAD left out (it rides along with GET).

/** Every method a route answers when the router was told `all`: more than any one handler lists. */
const ANSWERS_ALL = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

const METHODS = new Set<string>(['GET', 'POST', 'PATCH', 'DELETE']);

/** The content route answers in front of the routers (http/proxy/content.ts), reads only. */
const contentRoutes: GatewayRoute[] = [
  { method: 'GET', path: CONTENT_PATH },
  { method: 'GET', path: `${CONTENT_PATH}/*` },
];

// As policyPath (src/policy/refusal.ts) maps the prefix; letter case is left alone, as the
// routers match it (every served path is lower case but for parameter names).
function template(path: string, apiPrefix: string): string {
  const underPrefix = apiPrefix !== '/api' && (path === apiPrefix || path.startsWith(apiPrefix + '/'));
  return (underPrefix ? '/api' + path.slice(apiPrefix.length) : path).replace(/\/\{\*\w+\}$/, '/*');
}

export function routeTableOf(served: readonly ServedRoute[], apiPrefix: string): GatewayRoute[] {
  const out: GatewayRoute[] = [];
  const seen = new Set<string>();
  const add = (r: GatewayRoute) => {
    const k = `${r.method} ${r.path}`;
    if (seen.has(k)) return;
    seen.add(k);
    out.push(r);
  };
  for (const r of served) {
    const path = template(r.path, apiPrefix);
    if (ANSWERS_ALL.every((m) => r.methods.includes(m))) {
      add({ method: 'ALL', path });
      continue;
    }
    for (const m of r.methods) {
      if (m === 'HEAD') continue;
      if (!METHODS.has(m)) throw new Error(`route ${m} ${r.path}: the policy's route table has no method ${m}`);
      add({ method: m as GatewayRoute['method'], path });
    }
  }
  for (const r of contentRoutes) add(r);
  return out;
}
