// The policy lines compiled for the request path. Casbin's enforcer walks every line per decision
// (microseconds a line), and real paths carry ids, so a memo of concrete paths rarely hits. This
// form indexes the same lines by subject kind, method and path, each pattern compiled once, and
// walks only the lines that can match: a decision costs the same on a path never seen and on a
// policy of ten thousand lines. It answers as the enforcer does for the model's own matcher
// (deny overrides; the first matching deny in file order, else the last matching allow, decides).
import { RegExpParser } from '@eslint-community/regexpp';
import {
  compileMethodPattern, compilePathPattern, EXCEPT, matchesOneSegment, parseCondition, permTerm, PROBE_METHODS, SUBJECTS, type PathMatcher,
} from './patterns.ts';
import type { PolicyRule } from './rules.ts';

export interface CompiledLine {
  /** Position in file order: the deciding line is chosen by it. */
  readonly index: number;
  readonly rule: PolicyRule;
  readonly deny: boolean;
  readonly method: RegExp;
  /** Bit i set when the method pattern matches the i-th probe method (GET, HEAD, ...). */
  readonly methods: number;
  /** A glob's base, split into segments (`**` last when it ends so). */
  readonly segments: readonly string[];
  /** Null when reaching the line in the index already proves the path matches (a plain glob). */
  readonly pathTest: PathMatcher | null;
  /** Attribute words that must be present, and words that must be absent. */
  readonly need: readonly string[];
  readonly forbid: readonly string[];
  /** `S:A` atoms a refused key could add to change this line's verdict: what a refusal's search tries. */
  readonly asks: readonly string[];
  /** For a regular-expression path: the text every path it matches starts with. */
  readonly prefix: string;
}

/** The caller's attributes as sets, in the words of the model's `r.attrs`. */
export interface Attributes {
  readonly perms: ReadonlySet<string>;
  /** `role:NAME`, or null. */
  readonly role: string | null;
  readonly mcp: boolean;
  readonly oauth: boolean;
}

const has = (a: Attributes, word: string): boolean =>
  word.startsWith('perm:')
    ? a.perms.has(word)
    : word === a.role || (a.mcp && word === 'via:mcp') || (a.oauth && word === 'via:oauth');

export function conditionHolds(line: CompiledLine, a: Attributes): boolean {
  for (const w of line.need) if (!has(a, w)) return false;
  for (const w of line.forbid) if (has(a, w)) return false;
  return true;
}

interface Node {
  literal: Map<string, Node> | null;
  one: Node | null;
  /** Globs that end exactly at this depth. */
  end: CompiledLine[];
  /** Globs whose `**` starts at this depth: any path that reaches here. */
  rest: CompiledLine[];
  /** Regular expressions whose literal prefix spells the segments leading here: tested when reached. */
  regex: CompiledLine[];
}

const node = (): Node => ({ literal: null, one: null, end: [], rest: [], regex: [] });

function literalChild(n: Node, seg: string): Node {
  n.literal ??= new Map();
  let next = n.literal.get(seg);
  if (!next) n.literal.set(seg, (next = node()));
  return next;
}

/** The text every match of an anchored regular expression starts with (`^/api/reports/[0-9]+$` → `/api/reports/`). */
export function literalPrefix(source: string): string {
  const pattern = new RegExpParser({ ecmaVersion: 2025 }).parsePattern(source);
  if (pattern.alternatives.length !== 1) return '';
  const [first, ...rest] = pattern.alternatives[0]!.elements;
  if (first?.type !== 'Assertion' || first.kind !== 'start') return '';
  let out = '';
  for (const e of rest) {
    if (e.type !== 'Character') break;
    out += String.fromCodePoint(e.value);
  }
  return out;
}

/** Whether a line applies to the request's method: a bit per probe method, else its pattern. */
interface MethodAsk { bit: number; method: string }
const methodHolds = (l: CompiledLine, m: MethodAsk): boolean => (m.bit !== 0 ? (l.methods & m.bit) !== 0 : l.method.test(m.method));
const pathHolds = (l: CompiledLine, path: string): boolean => l.pathTest === null || l.pathTest.test(path);

/** One subject kind: a segment trie of the lines that apply to it. */
class PathIndex {
  private readonly root = node();
  /** Regular expressions that may match a path not starting with `/`. */
  private readonly unrooted: CompiledLine[] = [];

  add(line: CompiledLine): void {
    if (line.rule.path.startsWith('^')) {
      if (!line.prefix.startsWith('/')) {
        this.root.regex.push(line);
        this.unrooted.push(line);
        return;
      }
      // Only the segments the prefix closes with a `/` are whole; the text after the last one is not.
      let n = this.root;
      for (const s of line.prefix.slice(1).split('/').slice(0, -1)) n = literalChild(n, s);
      n.regex.push(line);
      return;
    }
    const segs = line.segments;
    const last = segs[segs.length - 1] === '**';
    let n = this.root;
    for (const seg of last ? segs.slice(0, -1) : segs) n = matchesOneSegment(seg) ? (n.one ??= node()) : literalChild(n, seg);
    (last ? n.rest : n.end).push(line);
  }

  /** Every line whose method and path patterns hold for the request, in no particular order. */
  collect(m: MethodAsk, path: string, out: CompiledLine[]): void {
    if (!path.startsWith('/')) {
      for (const l of this.unrooted) if (methodHolds(l, m) && l.pathTest!.test(path)) out.push(l);
      return;
    }
    walk(this.root, path.slice(1).split('/'), 0, m, path, out);
  }
}

function walk(n: Node, parts: readonly string[], i: number, m: MethodAsk, path: string, out: CompiledLine[]): void {
  for (const l of n.rest) if (methodHolds(l, m) && pathHolds(l, path)) out.push(l);
  for (const l of n.regex) if (methodHolds(l, m) && l.pathTest!.test(path)) out.push(l);
  if (i === parts.length) {
    for (const l of n.end) if (methodHolds(l, m) && pathHolds(l, path)) out.push(l);
    return;
  }
  const part = parts[i]!;
  const lit = n.literal?.get(part);
  if (lit) walk(lit, parts, i + 1, m, path, out);
  if (n.one && part !== '') walk(n.one, parts, i + 1, m, path, out);
}

export interface CompiledPolicy {
  readonly lines: readonly CompiledLine[];
  /** The lines whose subject, method and path hold for the request, whatever their condition. */
  candidates(kind: string, method: string, path: string): CompiledLine[];
}

/** Which `S:A` a scope's term stands for: `perm:S` any declared action, `perm:S:A` that one. */
export type ActionsOf = (scope: string) => readonly string[] | null;

/**
 * Compiles the lines. `actionsOf` gives a declared scope's actions (null: no catalog, so every
 * name counts with the action `access`); it fixes the atoms a refusal's search may try per line.
 */
export function compilePolicy(rules: readonly PolicyRule[], actionsOf: ActionsOf): CompiledPolicy {
  const methods = new Map<string, { re: RegExp; bits: number }>();
  const paths = new Map<string, PathMatcher>();
  const lines = rules.map((rule, index): CompiledLine => {
    let method = methods.get(rule.method);
    if (!method) {
      const re = compileMethodPattern(rule.method);
      methods.set(rule.method, (method = { re, bits: PROBE_METHODS.reduce((bits, m, i) => (re.test(m) ? bits | (1 << i) : bits), 0) }));
    }
    const regex = rule.path.startsWith('^');
    const at = rule.path.indexOf(EXCEPT);
    let pathTest: PathMatcher | null = null;
    if (regex || at >= 0) {
      pathTest = paths.get(rule.path) ?? null;
      if (!pathTest) paths.set(rule.path, (pathTest = compilePathPattern(rule.path)));
    }
    const base = regex ? '' : at < 0 ? rule.path : rule.path.slice(0, at).trim();
    const terms = parseCondition(rule.condition);
    const deny = rule.effect === 'deny';
    const asks: string[] = [];
    for (const t of terms) {
      const perm = permTerm(t.attribute);
      // An allow line opens with what it asks for; a deny line lets go when what it asks to be missing is held.
      if (!perm || deny !== t.negated) continue;
      const declared = actionsOf(perm.scope);
      const actions = perm.action ? (declared === null || declared.includes(perm.action) ? [perm.action] : []) : (declared ?? ['access']);
      for (const a of actions) asks.push(`${perm.scope}:${a}`);
    }
    return {
      index, rule, deny, method: method.re, methods: method.bits, pathTest, asks,
      prefix: regex ? literalPrefix(rule.path) : '',
      // `/` alone is the path whose one segment is empty; no other glob has an empty segment.
      segments: regex ? [] : base === '/' ? [''] : base.slice(1).split('/'),
      need: terms.filter((t) => !t.negated).map((t) => t.attribute),
      forbid: terms.filter((t) => t.negated).map((t) => t.attribute),
    };
  });

  const index = new Map<string, PathIndex>();
  for (const kind of SUBJECTS) {
    const ix = new PathIndex();
    for (const l of lines) if (l.rule.subject === '*' || l.rule.subject === kind) ix.add(l);
    index.set(kind, ix);
  }
  const bitOf = new Map<string, number>(PROBE_METHODS.map((m, i) => [m, 1 << i]));

  return {
    lines,
    candidates(kind, method, path) {
      const out: CompiledLine[] = [];
      index.get(kind)?.collect({ bit: bitOf.get(method) ?? 0, method }, path, out);
      return out;
    },
  };
}

/** The deciding line among candidates: the first deny in file order whose condition holds, else the last such allow. */
export function verdict(candidates: readonly CompiledLine[], a: Attributes): { allowed: boolean; line: CompiledLine | null } {
  let deny: CompiledLine | null = null;
  let allow: CompiledLine | null = null;
  for (const l of candidates) {
    if (l.deny ? deny !== null && deny.index < l.index : allow !== null && allow.index > l.index) continue;
    if (!conditionHolds(l, a)) continue;
    if (l.deny) deny = l;
    else allow = l;
  }
  if (deny) return { allowed: false, line: deny };
  return { allowed: allow !== null, line: allow };
}
