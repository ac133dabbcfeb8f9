import type { Permissions } from '../../policy/scopes.ts';
import type { RateLimitRule } from '../../config.ts';

/** Scope name -> permitted actions, as stored: `{ ai: ["access"] }`, `{ reports: ["read"] }`. */
export type { Permissions };

export type KeyState = 'active' | 'disabled' | 'expired' | 'rate-limited';

/** What the gateway knows about a key that authenticated. Never carries the hash or plaintext. */
export interface VerifiedKey {
  id: string;
  userId: string;
  name: string;
  start: string;
  /** Names of the scopes it holds some action of, e.g. ['ai', 'reports']. */
  scopes: string[];
  /** What it holds, as stored; the policy reads it against the declared scopes. */
  permissions: Permissions;
  requestQuota: number;
  /** Short windows beside the day, shortest first; [] when none. */
  rateLimits: RateLimitRule[];
  expiresAt: Date | null;
}

/** A key as the API answers it: never its hash or plaintext, only its start. */
export interface ApiKeyView {
  id: string;
  name: string;
  start: string;
  prefix: string;
  permissions: Permissions;
  ai: boolean;
  mcp: boolean;
  requestQuota: { limit: number; window: 'day' };
  rateLimits: RateLimitRule[];
  state: KeyState;
  enabled: boolean;
  expiresAt: string | null;
  createdAt: string;
  lastUsedAt: string | null;
  /** The key this one replaced, and the key that replaced it (rotation). */
  rotatedFrom: string | null;
  rotatedTo: string | null;
  /** Stops working within 7 days. */
  expiresSoon: boolean;
}

/** An expected outcome, not an error: only the HTTP edge turns it into a response. */
export type AuthResult =
  | { status: 'valid'; key: VerifiedKey; owner: KeyOwner }
  | { status: 'unknown' | 'revoked' | 'disabled' | 'expired' | 'owner-banned' };

export interface KeyOwner { id: string; email: string; name: string; role: 'user' | 'admin'; banned: boolean; plan: string | null }
