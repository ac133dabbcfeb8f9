// A strict parser of RFC 8941 structured-field Lists, as a client library reads the IETF
// RateLimit fields: members are Items (bare item + parameters); inner lists are refused, since the
// RateLimit fields never use them. Throws on anything RFC 8941 would fail to parse.

export type BareItem = string | number | boolean | { token: string };
export interface Member { value: BareItem; params: Map<string, BareItem> }

export function parseList(input: string): Member[] {
  let i = 0;
  const s = input;
  const fail = (why: string): never => { throw new Error(`structured field: ${why} at ${i} in ${JSON.stringify(s)}`); };
  const skipSP = () => { while (s[i] === ' ') i++; };
  const skipOWS = () => { while (s[i] === ' ' || s[i] === '\t') i++; };

  function key(): string {
    if (!/[a-z*]/.test(s[i] ?? '')) fail('key must start with a lowercase letter or *');
    const start = i;
    while (/[a-z0-9_\-.*]/.test(s[i] ?? '')) i++;
    return s.slice(start, i);
  }
  function bareItem(): BareItem {
    const c = s[i] ?? '';
    if (c === '-' || /[0-9]/.test(c)) {
      const m = /^-?[0-9]{1,15}(\.[0-9]{1,3})?/.exec(s.slice(i));
      if (!m) return fail('bad number');
      if (!m[1] && m[0].replace('-', '').length > 15) fail('integer too long');
      i += m[0].length;
      return Number(m[0]);
    }
    if (c === '"') {
      i++;
      let out = '';
      for (;;) {
        const ch = s[i++];
        if (ch === undefined) return fail('unterminated string');
        if (ch === '\\') {
          const next = s[i++];
          if (next !== '"' && next !== '\\') fail('bad escape');
          out += next;
        } else if (ch === '"') return out;
        else if (ch < ' ' || ch > '~') fail('string character out of range');
        else out += ch;
      }
    }
    if (c === '?') {
      i++;
      const b = s[i++];
      if (b !== '0' && b !== '1') fail('bad boolean');
      return b === '1';
    }
    if (/[A-Za-z*]/.test(c)) {
      const start = i;
      while (/[!#$%&'*+\-.^_`|~0-9A-Za-z:/]/.test(s[i] ?? '')) i++;
      return { token: s.slice(start, i) };
    }
    return fail('expected an item');
  }
  function params(): Map<string, BareItem> {
    const out = new Map<string, BareItem>();
    while (s[i] === ';') {
      i++;
      skipSP();
      const k = key();
      let v: BareItem = true;
      if (s[i] === '=') { i++; v = bareItem(); }
      out.set(k, v);
    }
    return out;
  }

  const members: Member[] = [];
  skipSP();
  if (i === s.length) return members;
  for (;;) {
    if (s[i] === '(') fail('inner lists are not expected here');
    members.push({ value: bareItem(), params: params() });
    skipOWS();
    if (i === s.length) return members;
    if (s[i] !== ',') fail('expected a comma');
    i++;
    skipOWS();
    if (i === s.length) fail('trailing comma');
  }
}
