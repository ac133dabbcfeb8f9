import type { ParameterizedContext } from 'koa';
import type { SessionInfo, UserRecord } from '../services/accounts.ts';
import type { VerifiedKey } from '../services/keys/types.ts';

/** Who is calling. Anonymous is a real subject the policy decides about, not a missing value. */
export type Caller =
  | { kind: 'anonymous' }
  | { kind: 'session'; user: UserRecord; session: SessionInfo; token: string }
  | { kind: 'key'; user: UserRecord; key: VerifiedKey; grant?: OAuthGrantRef };

/**
 * Set when the key-kind caller is an OAuth access token: `key` then describes the
 * grant (its id, the `mcp` permission, its quota), and `grant` says so to the policy and upstream.
 */
export interface OAuthGrantRef { id: string; clientId: string; clientName: string }

export interface GatewayState {
  requestId: string;
  caller: Caller;
  /** The path as decided by the policy: normalised, with the configured prefix in place. */
  canonicalPath: string;
}

export type GatewayContext = ParameterizedContext<GatewayState>;
