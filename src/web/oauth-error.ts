import { html, pageHeaders } from './layout.ts';

// The page a person's browser gets when an authorization request cannot go on. It is
// drawn here, never handed to the client by a redirect: a request that failed checks has not
// shown that its redirect URI belongs to whoever sent the person, so no URI in it is trusted.

export const OAUTH_ERROR_HEADERS: Record<string, string> = {
  ...pageHeaders,
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
};

/** A whole page, standalone: it is also drawn by the OAuth library, which has no page bundle. */
export function oauthErrorPage(title: string, words: string, detail: string | null): string {
  return html`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${title} · keygate</title>
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;line-height:1.5}
code{word-break:break-all}</style></head>
<body><main>
<h1>${title}</h1>
<p>${words}</p>
${detail ? html`<p>What was wrong: <code>${detail}</code></p>` : null}
<p>Nothing was connected. Go back to the app you came from and start connecting again; if this keeps happening, the app's authors
 need to hear of it.</p>
</main></body>
</html>`.html;
}
