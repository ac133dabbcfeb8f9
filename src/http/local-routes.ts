import type Router from '@koa/router';
import type { Middleware, Next } from 'koa';
import type { GatewayContext, GatewayState } from './state.ts';

// The gateway's own routers, dispatched in order as `app.use(router.routes())` for each would, but
// without asking routers that have no route for the path: a router that matches nothing only
// passes the request on, so starting at the first one that matches changes no answer.

const REMEMBERED_PATHS = 10_000;

/** The index of the first router with a route for `path` (any method), or -1; remembered per path. */
export function routerIndex(routers: Router<GatewayState>[]): (path: string) => number {
  let known = new Map<string, number>();
  return (path) => {
    let i = known.get(path);
    if (i === undefined) {
      // A route, not a router's own middleware (its admin rule, say), which matches every path.
      i = routers.findIndex((r) => r.match(path, 'GET').path.some((layer) => layer.methods.length > 0));
      // Paths are caller-chosen (ids, made-up routes): start over rather than grow without bound.
      if (known.size >= REMEMBERED_PATHS) known = new Map();
      known.set(path, i);
    }
    return i;
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
