// Text on the webhooks pages that someone other than the reader chose: an endpoint's address and
// description (any admin, the API, the CLI) and the first lines of a receiver's answer. `html`
// escapes markup; these keep such text from misleading the reader or burying the page.

/**
 * Direction overrides and isolates shown for what they are: an override would otherwise show
 * "gnp.exe" as "exe.png". Right-to-left letters themselves are left alone.
 */
const BIDI_CONTROLS = /[\u202A-\u202E\u2066-\u2069]/g;
export const plainly = (text: string) => text.replace(BIDI_CONTROLS, (c) => `<U+${c.codePointAt(0)!.toString(16).toUpperCase()}>`);

/**
 * An address as a heading or a link's words: up to 120 characters, so a 2,000-character one does
 * not push a phone's actions screens away. Stored addresses are normalized URLs (ASCII), so the
 * cut splits no character; the endpoint's page shows the whole address under its heading.
 */
export const SHORT_URL = 120;
export const shortUrl = (url: string) => (url.length > SHORT_URL ? `${url.slice(0, SHORT_URL - 1)}…` : url);
