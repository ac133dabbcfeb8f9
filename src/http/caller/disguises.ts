import { hasValidChecksum, KEY_BODY_LENGTH } from '../../services/keys/format.ts';
import { isTokenShaped, TOKEN_PREFIX } from '../../oauth/token-format.ts';

// A keygate key or token can be wrapped before it is put in an Authorization header, by a client
// library or by someone smuggling it past this screen: percent-encoded (`kgo%5F…`), as hex, as
// base64 inside base64 (`Basic base64(base64("u:" + token))`), or with its prefix in another
// letter case. Each wrapping is undone in turn, a few layers deep, and every text found on the way
// is searched for a value with our prefix and a checksum that holds. Recognised by shape and
// checksum alone: no lookup. The work is bounded; a value that exceeds the bound is treated as
// holding a credential (it is dropped, not forwarded), since no real Authorization comes near it.

/** Layers of wrapping undone, one inside another. */
const MAX_DEPTH = 4;
/** Characters of decoded text examined per value, all layers together. */
const MAX_EXAMINED = 256 * 1024;
/** A base64 run shorter than this cannot hold a key or anything wrapping one. */
const MIN_BASE64 = 16;
/** Hex runs: two digits a character, and no credential is shorter than its body. */
const MIN_HEX = 2 * KEY_BODY_LENGTH;

const BASE64_RUN = new RegExp(`[A-Za-z0-9+/_-]{${MIN_BASE64},}`, 'g');
const HEX_RUN = new RegExp(`[0-9A-Fa-f]{${MIN_HEX},}`, 'g');
const PERCENT = /%[0-9A-Fa-f]{2}/;
const ESCAPE = /\\(?:x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4})/;

const percentDecoded = (text: string) => text.replace(/%([0-9A-Fa-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
const escapesDecoded = (text: string) => text.replace(
  /\\(?:x([0-9A-Fa-f]{2})|u([0-9A-Fa-f]{4}))/g,
  (_, x?: string, u?: string) => String.fromCharCode(parseInt(x ?? u ?? '0', 16)),
);

/** What each wrapping this screen knows could have made of `text`, one layer undone. */
function unwrapped(text: string): string[] {
  const out: string[] = [];
  if (PERCENT.test(text)) out.push(percentDecoded(text));
  if (ESCAPE.test(text)) out.push(escapesDecoded(text));
  // A run may begin with characters that are not part of the encoding (`f` + hex, `tok` + base64):
  // every alignment is tried, so the credential's own characters are decoded in one of them.
  for (const [run] of text.matchAll(HEX_RUN)) {
    for (let skip = 0; skip < 2; skip++) out.push(Buffer.from(run.slice(skip), 'hex').toString('latin1'));
  }
  for (const [run] of text.matchAll(BASE64_RUN)) {
    for (let skip = 0; skip < 4 && run.length - skip >= MIN_BASE64; skip++) {
      out.push(Buffer.from(run.slice(skip), 'base64').toString('latin1'));
    }
  }
  return out;
}

/** Whether a text holds, anywhere and in any letter case of `prefix`, a value `ours` accepts. */
function prefixedFinder(prefix: string, ours: (value: string) => boolean): (text: string) => boolean {
  const length = prefix.length + KEY_BODY_LENGTH;
  const find = new RegExp(prefix.replace(/[^A-Za-z0-9]/g, '\\$&'), 'gi');
  return (text) => {
    for (const m of text.matchAll(find)) {
      if (ours(prefix + text.slice(m.index + prefix.length, m.index + length))) return true;
    }
    return false;
  };
}

/**
 * Whether an Authorization value holds a keygate token, or a key under `keyPrefix` (null when keys
 * are off), in plain text or under any of the wrappings above.
 */
export function ownCredentialFinder(keyPrefix: string | null): (value: string) => boolean {
  const token = prefixedFinder(TOKEN_PREFIX, isTokenShaped);
  const key = keyPrefix ? prefixedFinder(keyPrefix, hasValidChecksum) : () => false;
  const holds = (text: string) => token(text) || key(text);
  return (value) => {
    const seen = new Set<string>([value]);
    let layer = [value];
    let examined = value.length;
    for (let depth = 0; layer.length > 0; depth++) {
      if (layer.some(holds)) return true;
      if (depth === MAX_DEPTH) return false;
      const next: string[] = [];
      for (const text of layer) {
        for (const inner of unwrapped(text)) {
          if (seen.has(inner)) continue;
          seen.add(inner);
          examined += inner.length;
          if (examined > MAX_EXAMINED) return true;
          next.push(inner);
        }
      }
      layer = next;
    }
    return false;
  };
}
