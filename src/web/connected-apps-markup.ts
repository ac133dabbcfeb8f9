import { html, type Html } from './layout.ts';

// Connected apps on Settings → Developers: the MCP clients the person let act as
// them through OAuth. Drawn with or without the keys section (an app connects with no key at all);
// the rows come from GET /api/oauth/grants once the script runs.

export function connectedAppsMarkup(): Html {
  return html`
<section class="keys apps" aria-labelledby="apps-title">
<h2 id="apps-title" tabindex="-1">Connected apps</h2>
<p>Apps you allowed to act as you on the MCP server, such as an AI assistant you signed in to with this account. Each may use the MCP
 tools only, not the rest of the API. Revoke any you no longer use or trust.</p>
<p id="apps-status" class="page-status" role="status" aria-live="polite"></p>
<p id="apps-message" class="muted" role="status">Loading your connected apps…</p>
<ul id="apps-list" class="key-list"></ul>
</section>

<dialog id="revoke-app-dialog" aria-labelledby="revoke-app-title" aria-describedby="revoke-app-consequences">
<form method="dialog">
<h2 id="revoke-app-title">Revoke access for “<span id="revoke-app-name"></span>”?</h2>
<div id="revoke-app-consequences">
<p>The app is signed out at once: every token it holds stops working, and it cannot act as you again.</p>
<p>To use it again later, connect it again and allow it on the consent page.</p>
</div>
<div class="actions">
<button type="submit" value="cancel" class="secondary" autofocus>Cancel</button>
<button type="submit" value="revoke" class="danger">Revoke access</button>
</div>
</form>
</dialog>`;
}
