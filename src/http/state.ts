import type { ParameterizedContext } from 'koa';
import type { SessionInfo, UserRecord } from '../services/accounts.ts';
import type { VerifiedKey } from '../services/keys/types.ts';

/** Who is calling. Anonymous is a real subject the policy decides about, not a missing value. */
export type Caller =
  | { kind: 'anonymous' }
  | { kind: 'session'; user: UserRecord; session: SessionInfo; token: string }
  | { kind: 'key'; user: UserRecord; key: VerifiedKey };

export interface GatewayState {
  requestId: string;
  caller: Caller;
  /** The path as decided by the policy: normalised, with the configured prefix in place. */
  canonicalPath: string;
}

export type GatewayContext = ParameterizedContext<GatewayState>;
