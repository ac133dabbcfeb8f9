import Router from '@koa/router';
import type { Config } from '../config.ts';
import type { KeyService } from '../services/keys/service.ts';
import type { PolicyHolder } from '../http/policy/middleware.ts';
import type { Upstream } from '../http/proxy/upstream.ts';
import type { GatewayState } from '../http/state.ts';

export interface McpDeps { config: Config; keys: KeyService; policy: PolicyHolder; upstream: Upstream | null }

/** `/api/mcp` (MCP Streamable HTTP) and `/.well-known/oauth-protected-resource`. */
export function mcpRoutes(_deps: McpDeps): Router<GatewayState> {
  return new Router<GatewayState>({ sensitive: true, strict: true });
}
