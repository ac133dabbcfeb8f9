import type { Next } from 'koa';
import type { GatewayContext } from './state.ts';

// Who is asking, what it costs them, whether they may: one layer, three steps in this order. Each
// step answers at once when it has nothing to wait for (a verified key, a leased block), so the
// usual key request passes this layer without a promise of its own.

type Step = (ctx: GatewayContext) => Promise<void> | void | undefined;

export function admission(resolve: Step, spend: Step, decide: (ctx: GatewayContext) => void) {
  const decideThenGo = (ctx: GatewayContext, next: Next) => {
    decide(ctx);
    return next();
  };
  const spendThenGo = (ctx: GatewayContext, next: Next) => {
    const spending = spend(ctx);
    return spending ? spending.then(() => decideThenGo(ctx, next)) : decideThenGo(ctx, next);
  };
  return function admit(ctx: GatewayContext, next: Next) {
    const resolving = resolve(ctx);
    return resolving ? resolving.then(() => spendThenGo(ctx, next)) : spendThenGo(ctx, next);
  };
}
