// What the server tells a page about itself. It travels inside the HTML as
// <script type="application/json" id="keygate-config">: CSP allows it because it never runs, and
// the page needs no extra request before it can draw the right form.

/** A declared scope as the page shows it: a checkbox while available, a badge on keys holding it. */
export interface PageScope {
  name: string;
  label: string;
  description: string;
  actions: string[];
  /** Offered by the create form: its `requires` feature is on. */
  available: boolean;
}

export interface KeysPageConfig {
  variant: 'A' | 'B';
  /** The declared scopes, in file order; empty under Variant B, whose keys hold none. */
  scopes: PageScope[];
  /** Variant A limits, so a refusal can name the number; null under Variant B. */
  maxKeysPerUser: number | null;
  maxCreatesPerDay: number | null;
  /** apiKeys.maxLifetimeDays: without it the create form offers "No expiry". */
  maxLifetimeDays: number | null;
}

export interface PageConfig {
  apiPrefix: string;
  signUp: boolean;
  /** null while API keys are turned off on this server. */
  keys: KeysPageConfig | null;
  /**
   * Settings → Developers lists the OAuth grants: only while the MCP server is on,
   * since that is the only place a grant's token works and the grants API exists.
   */
  connectedApps: boolean;
}

export const CONFIG_ELEMENT_ID = 'keygate-config';
