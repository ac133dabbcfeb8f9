import type { AssetBundle } from './assets.ts';
import { CONFIG_ELEMENT_ID, type PageConfig } from './page-config.ts';

/** Escapes text for HTML element content and double-quoted attributes. */
export function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** HTML that is already escaped; only the templates in this folder make it. */
export interface Html { readonly html: string }
export const raw = (html: string): Html => ({ html });

/** A tagged template that escapes every interpolated string and trusts only Html values. */
export function html(strings: TemplateStringsArray, ...values: (string | number | Html | Html[] | false | null)[]): Html {
  let out = strings[0] ?? '';
  values.forEach((v, i) => {
    if (Array.isArray(v)) out += v.map((h) => h.html).join('');
    else if (v === false || v === null) out += '';
    else if (typeof v === 'object') out += v.html;
    else out += esc(String(v));
    out += strings[i + 1] ?? '';
  });
  return raw(out);
}

// "<" is written as \u003c so that no value (an operator's prefix, say) can close the script element.
const configJson = (config: PageConfig) => JSON.stringify(config).replace(/</g, '\\u003c');

export interface LayoutInput {
  title: string;
  assets: AssetBundle;
  /** The page's script; null for a page that needs none. */
  script: string | null;
  config: PageConfig;
  header: Html;
  main: Html;
}

export function layout({ title, assets, script, config, header, main }: LayoutInput): string {
  return `<!doctype html>
${html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light">
<title>${title} · keygate</title>
<link rel="icon" type="image/svg+xml" href="${assets.urls.icon}">
<link rel="stylesheet" href="${assets.urls.styles}">
${script ? html`<script type="module" src="${script}"></script>` : false}
<script type="application/json" id="${CONFIG_ELEMENT_ID}">${raw(configJson(config))}</script>
</head>
<body>
<a class="skip-link" href="#main">Skip to main content</a>
<header class="site-header">
<div class="site-header-inner">
<a class="brand" href="/settings/developers"><img src="${assets.urls.icon}" alt="" width="24" height="24"> keygate</a>
${header}
</div>
</header>
<main id="main" tabindex="-1">
${main}
</main>
</body>
</html>
`.html}`;
}

/** Response headers for every page: nothing runs, loads or frames the page but its own assets. */
export const pageHeaders: Record<string, string> = {
  'Content-Security-Policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    + "form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  // A page names the signed-in user and is drawn for their session: no cache may keep or replay it.
  'Cache-Control': 'no-store',
  'Cross-Origin-Opener-Policy': 'same-origin',
};
