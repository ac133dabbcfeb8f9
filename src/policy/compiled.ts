// The policy lines compiled for the request path. Casbin's enforcer walks every line per decision
// (microseconds a line), and real paths carry ids, so a memo of concrete paths rarely hits. This
// form indexes the same lines by subject kind, method and path, each pattern compiled once, and
// walks only the lines that can match: a decision costs the same on a path never seen and on a
// policy of ten thousand lines. It answers as the enforcer does for the model's own matcher
// (deny overrides; the first matching deny in file order, else the last matching allow, decides).
import { RegExpParser } from '@eslint-community/regexpp';
import { compileMethodPattern, compilePathPattern, EXCEPT, parseCondition, permTerm, PROBE_METHODS, SUBJECTS, type PathMatcher } from './patterns.ts';
import type { PolicyRule } from './rules.ts';

export interface CompiledLine {
  /** Position in file order: the deciding line is chosen by it. */
  readonly index: number;
  readonly rule: PolicyRule;
  readonly deny: boolean;
  readonly method: RegExp;
  /** Null when reaching the line in the index already proves the path matches (a plain glob). */
  readonly pathTest: PathMatcher | null;
  /** Attribute words that must be present, and words that must be absent. */
  readonly need: readonly string[];
  readonly forbid: readonly string[];
  /** `S:A` atoms a refused key could add to change this line's verdict (see requiredAtoms). */
  readonly asks: readonly string[];
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
  word.startsWith('perm:') ? a.perms.has(word) : word === a.role || (a.mcp && word === 'via:mcp') || (a.oauth && word === 'via:oauth');

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

/** One subject kind and one method (or every other method): a segment trie of the lines that apply. */
class PathIndex {
  private readonly root = node();
  /** Regular expressions that may match a path not starting with `/`. */
  private readonly unrooted: CompiledLine[] = [];

  add(line: CompiledLine): void {
    const pattern = line.rule.path;
    if (pattern.startsWith('^')) {
      const prefix = literalPrefix(pattern);
      if (!prefix.startsWith('/')) {
        this.root.regex.push(line);
        this.unrooted.push(line);
        return;
      }
      // Only the segments the prefix closes with a `/` are whole; the text after the last one is not.
      const whole = prefix.slice(1).split('/').slice(0, -1);
      this.at(whole).regex.push(line);
      return;
    }
    const at = pattern.indexOf(EXCEPT);
    const base = at < 0 ? pattern : pattern.slice(0, at).trim();
    // `/` alone is the path whose one segment is empty; no other glob has an empty segment.
    const segs = base === '/' ? [''] : base.slice(1).split('/');
    const last = segs[segs.length - 1] === '**';
    let n = this.root;
    for (const seg of last ? segs.slice(0, -1) : segs) n = seg === '*' || seg.startsWith(':') ? (n.one ??= node()) : literalChild(n, seg);
    (last ? n.rest : n.end).push(line);
  }

  private at(segments: readonly string[]): Node {
    let n = this.root;
    for (const s of segments) n = literalChild(n, s);
    return n;
  }

  /** Every line whose path pattern holds for the path, in no particular order. */
  collect(path: string, out: CompiledLine[]): void {
    if (!path.startsWith('/')) {
      for (const l of this.unrooted) if (l.pathTest!.test(path)) out.push(l);
      return;
    }
    walk(this.root, path.slice(1).split('/'), 0, path, out);
  }
}

function walk(n: Node, parts: readonly string[], i: number, path: string, out: CompiledLine[]): void {
  for (const l of n.rest) if (l.pathTest === null || l.pathTest.test(path)) out.push(l);
  for (const l of n.regex) if (l.pathTest!.test(path)) out.push(l);
  if (i === parts.length) {
    for (const l of n.end) if (l.pathTest === null || l.pathTest.test(path)) out.push(l);
    return;
  }
  const part = parts[i]!;
  const lit = n.literal?.get(part);
  if (lit) walk(lit, parts, i + 1, path, out);
  if (n.one && part !== '') walk(n.one, parts, i + 1, path, out);
}

export interface CompiledPolicy {
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
  const methods = new Map<string, RegExp>();
  const paths = new Map<string, PathMatcher>();
  const lines = rules.map((rule, index): CompiledLine => {
    let method = methods.get(rule.method);
    if (!method) methods.set(rule.method, (method = compileMethodPattern(rule.method)));
    const plainGlob = !rule.path.startsWith('^') && !rule.path.includes(EXCEPT);
    let pathTest: PathMatcher | null = null;
    if (!plainGlob) {
      pathTest = paths.get(rule.path) ?? null;
      if (!pathTest) paths.set(rule.path, (pathTest = compilePathPattern(rule.path)));
    }
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
      index, rule, deny, method, pathTest, asks,
      need: terms.filter((t) => !t.negated).map((t) => t.attribute),
      forbid: terms.filter((t) => t.negated).map((t) => t.attribute),
    };
  });

  // One index per subject kind and probe method, and one per kind for any other method, whose
  // lines keep their method test. The probe methods are what real requests use.
  const slots = [...PROBE_METHODS, ''] as const;
  const index = new Map<string, PathIndex[]>();
  for (const kind of SUBJECTS) {
    const mine = lines.filter((l) => l.rule.subject === '*' || l.rule.subject === kind);
    index.set(kind, slots.map((m) => {
      const ix = new PathIndex();
      for (const l of mine) if (m === '' || l.method.test(m)) ix.add(l);
      return ix;
    }));
  }
  const slotOf = new Map<string, number>(PROBE_METHODS.map((m, i) => [m, i]));
  const other = PROBE_METHODS.length;

  return {
    candidates(kind, method, path) {
      const byMethod = index.get(kind);
      if (!byMethod) return [];
      const slot = slotOf.get(method);
      const out: CompiledLine[] = [];
      if (slot !== undefined) {
        byMethod[slot]!.collect(path, out);
        return out;
      }
      byMethod[other]!.collect(path, out);
      return out.filter((l) => l.method.test(method));
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
