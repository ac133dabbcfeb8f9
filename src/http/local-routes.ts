import type Router from '@koa/router';
import type { Middleware, Next } from 'koa';
import type { GatewayContext, GatewayState } from './state.ts';

// The gateway's own routers, dispatched in order as `app.use(router.routes())` for each would, but
// without asking routers that have no route for the path: a router that matches nothing only
// passes the request on, so starting at the first one that matches changes no answer.

// Where path-to-regexp's syntax starts (a parameter, a wildcard, an optional group, an escape): a
// route's path up to there is literal, and only a request path starting with it can match the route.
const SYNTAX = /[:*{}()[\]?+!\\]/;

type Layer = Router<GatewayState>['stack'][number];
interface Candidate { router: number; layer: Layer; source: Layer['path']; literal: string; caseless: boolean }

function candidatesOf(routers: Router<GatewayState>[]): Candidate[] {
  return routers.flatMap((r, router) => r.stack
    // A route, not a router's own middleware (its admin rule, say), which matches every path.
    .filter((layer) => layer.methods.length > 0)
    .map((layer) => {
      // A path given as a regular expression (or as its source) has no literal part to go by.
      const path = typeof layer.path === 'string' && layer.opts.pathAsRegExp !== true ? layer.path : '';
      const cut = path.search(SYNTAX);
      // Without `strict` a trailing slash is optional: the literal stops before it.
      const literal = (cut < 0 ? path : path.slice(0, cut)).replace(/\/$/, '');
      const caseless = layer.opts.sensitive !== true;
      return { router, layer, source: layer.path, literal: caseless ? literal.toLowerCase() : literal, caseless };
    }));
}

/**
 * The index of the first router with a route for `path` (any method), or -1. No path is remembered:
 * paths name resources, so a memo of them would miss on almost every request and let one caller's
 * made-up paths push out everyone else's. A route's regular expression is run only when the path
 * starts with the route's literal part, so a path no router serves costs a few string comparisons.
 */
export function routerIndex(routers: Router<GatewayState>[]): (path: string) => number {
  let size = -1;
  let candidates: Candidate[] = [];
  const find = (path: string): number => {
    let lower: string | undefined;
    for (const c of candidates) {
      // A router's prefix set after this was made: its routes' literal parts are worked out again.
      if (c.layer.path !== c.source) return (candidates = candidatesOf(routers)), find(path);
      const subject = c.caseless ? (lower ??= path.toLowerCase()) : path;
      if (subject.startsWith(c.literal) && c.layer.match(path)) return c.router;
    }
    return -1;
  };
  return (path) => {
    // Routes added to a router after this was made are seen too.
    const now = routers.reduce((n, r) => n + r.stack.length, 0);
    if (now !== size) [size, candidates] = [now, candidatesOf(routers)];
    return find(path);
  };
}

export function localRoutes(routers: Router<GatewayState>[], firstRouter: (path: string) => number) {
  const dispatch = routers.map((r) => r.routes() as unknown as Middleware<GatewayState>);
  const runFrom = (i: number, ctx: GatewayContext, next: Next): Promise<unknown> =>
    i === dispatch.length ? next() : Promise.resolve(dispatch[i]!(ctx, () => runFrom(i + 1, ctx, next)));
  return function localRoutesMiddleware(ctx: GatewayContext, next: Next) {
    const first = firstRouter(ctx.path);
    return first < 0 ? next() : runFrom(first, ctx, next);
  };
}

/** A route the gateway serves itself, as its routers hold it. */
export interface ServedRoute { methods: string[]; path: string }

/** Every route of the routers; a router's own middleware (no methods) is none. */
export function servedRoutes(routers: Router<GatewayState>[]): ServedRoute[] {
  return routers.flatMap((r) => r.stack.filter((layer) => layer.methods.length > 0)
    .map((layer) => ({ methods: [...layer.methods], path: String(layer.path) })));
}
