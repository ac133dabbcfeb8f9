// What the server tells a page about itself. It travels inside the HTML as
// <script type="application/json" id="keygate-config">: CSP allows it because it never runs, and
// the page needs no extra request before it can draw the right form.

export interface KeysPageConfig {
  variant: 'A' | 'B';
  /** Whether the create form offers "Allow AI access": Variant A while AI is on. */
  offerAi: boolean;
  /** Whether the create form offers "Allow MCP access": Variant A while the MCP server is on. */
  offerMcp: boolean;
  /** Variant A limits, so a refusal can name the number; null under Variant B. */
  maxKeysPerUser: number | null;
  maxCreatesPerDay: number | null;
}

export interface PageConfig {
  apiPrefix: string;
  signUp: boolean;
  /** null while API keys are turned off on this server. */
  keys: KeysPageConfig | null;
}

export const CONFIG_ELEMENT_ID = 'keygate-config';
