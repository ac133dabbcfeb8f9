import type { Next } from 'koa';
import type { GatewayContext } from './state.ts';

// The checks every request passes before anyone is resolved (header count, path spelling, Host,
// feature gate, ...) are plain functions run in order inside one Koa layer: each is synchronous and
// either refuses (throws), answers the request itself (returns true), or lets it on. One layer
// instead of one each spares every request a promise, a bound `next` and a stack frame per check.

/** One check of a request: throws to refuse it, returns true when it answered it, else lets it on. */
export type Screen = (ctx: GatewayContext) => boolean | void;

/** The screens, in order, as one pipeline step. */
export function screens(...steps: Screen[]) {
  return function screensMiddleware(ctx: GatewayContext, next: Next) {
    for (const step of steps) if (step(ctx) === true) return;
    return next();
  };
}
