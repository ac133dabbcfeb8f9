// What a decision is asked about and answers, apart from the engine that builds the answer, so that
// the compiled form and the reference can name them without importing the engine back.
import type { PolicyRule } from './rules.ts';
import type { ScopeCatalog } from './scopes.ts';

export type SubjectKind = 'session' | 'key' | 'anonymous';

export interface PolicySubject {
  kind: SubjectKind;
  /** Held permissions as `S` (its `access` action) or `S:A`: `['ai', 'reports:read']`. */
  permissions: readonly string[];
  role: 'user' | 'admin' | null;
  /** `mcp` when an MCP tool asks on the caller's behalf: the request then carries `via:mcp`. */
  channel?: 'http' | 'mcp';
  /** An OAuth access token rather than a key: the request then carries `via:oauth`. */
  oauth?: boolean;
}

export interface Decision {
  allowed: boolean;
  /** Id of the line that decided: the first matching deny, else the last matching allow; null when no line matched (default deny). */
  ruleId: string | null;
  /** For a refused key: the permission (or comma-joined permissions) whose addition would allow it. */
  requiredPermission: string | null;
  /** For a refused key: no permission would allow it; only a signed-in session can do this. */
  neverForKeys: boolean;
}

export interface PolicyEngine {
  /** The returned object is frozen and may be shared between callers. */
  decide(subject: PolicySubject, method: string, path: string): Decision;
  /** Every line whose matcher holds for the request, in file order, whatever the outcome. */
  matchingRules(subject: PolicySubject, method: string, path: string): PolicyRule[];
  rule(id: string): PolicyRule | undefined;
  readonly rules: readonly PolicyRule[];
  /** The scopes a key may hold, read with the policy and swapped in with it. */
  readonly scopes: ScopeCatalog;
  /**
   * The same two questions asked of node-casbin's enforcer over the same lines: what the compiled
   * form answering `decide` and `matchingRules` is checked against. Slow (it walks every line), and
   * built on first use: the request path never asks it, and at ten thousand lines the enforcer
   * holds more memory than the rest of the gateway's policy together.
   */
  reference(): Promise<Pick<PolicyEngine, 'decide' | 'matchingRules'>>;
}

/** The engine in force. A reload builds a new engine and swaps it here in one assignment. */
export interface PolicyHolder { current: PolicyEngine }
