import { AppError } from '../../errors.ts';
import type { Caller, GatewayContext } from '../state.ts';

// The policy has already decided who may reach a route. These narrow the caller's type for the
// handler; reaching one with the wrong kind means a policy line is missing, so they refuse rather
// than guess.

type Of<K extends Caller['kind']> = Extract<Caller, { kind: K }>;

export function requireUser(ctx: GatewayContext): Of<'session'> | Of<'key'> {
  const c = ctx.state.caller;
  if (c.kind === 'anonymous') throw new AppError('UNAUTHENTICATED', 'Sign in or send an API key in the x-api-key header.');
  // The token resolver answers only on the MCP endpoint, which has no handler here.
  if (c.kind === 'grant') throw new AppError('FORBIDDEN', 'An OAuth access token is a credential on the MCP endpoint only.');
  return c;
}

export function requireSessionCaller(ctx: GatewayContext): Of<'session'> {
  const c = requireUser(ctx);
  if (c.kind !== 'session') throw new AppError('FORBIDDEN', 'This endpoint needs a signed-in session; API keys cannot use it.');
  return c;
}

