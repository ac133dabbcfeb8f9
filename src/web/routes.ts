import Router from '@koa/router';
import type { Config } from '../config.ts';
import type { GatewayState } from '../http/state.ts';

export interface WebDeps { config: Config }

/** The pages: /sign-in and /settings/developers, and their assets. */
export function webRoutes(_deps: WebDeps): Router<GatewayState> {
  return new Router<GatewayState>({ sensitive: true, strict: true });
}
