import type { ParameterizedContext } from 'koa';
import type { SessionInfo, UserRecord } from '../services/accounts.ts';
import type { VerifiedKey } from '../services/keys/types.ts';
import type { RateLimitRule } from '../config.ts';
import type { Permissions } from '../policy/scopes.ts';

/** Who is calling. Anonymous is a real subject the policy decides about, not a missing value. */
export type Caller =
  | { kind: 'anonymous' }
  | { kind: 'session'; user: UserRecord; session: SessionInfo; token: string }
  | { kind: 'key'; user: UserRecord; key: VerifiedKey }
  | { kind: 'grant'; user: UserRecord; grant: VerifiedGrant };

/**
 * An OAuth access token's grant: a credential on the MCP endpoint only, acting as its owner with
 * the `mcp` permission alone. The policy decides it as a key (src/policy/refusal.ts, subjectOf).
 */
export interface VerifiedGrant {
  id: string;
  clientId: string;
  clientName: string;
  permissions: Permissions;
  /** Stamped from the owner's plan when granted, counted like a key's. */
  requestQuota: number;
  rateLimits: RateLimitRule[];
}

export interface GatewayState {
  requestId: string;
  caller: Caller;
  /** The path as decided by the policy: normalised, with the configured prefix in place. */
  canonicalPath: string;
}

export type GatewayContext = ParameterizedContext<GatewayState>;
