// Whether a path regular expression runs in time linear in the path. V8 backtracks,
// so a pattern such as `^/api/reports/(a+)+b$` lets one 30-character path block the event loop for
// seconds. The pattern is parsed by a real parser (@eslint-community/regexpp) and its tree checked
// for what makes a backtracking engine super-linear, and for what an RE2-class engine refuses.
import { RegExpParser, type AST } from '@eslint-community/regexpp';

// Canonical paths are ASCII (anything else arrives percent-encoded), so what a character matcher
// can consume is known exactly by probing these 128 characters.
const ASCII = Array.from({ length: 128 }, (_, i) => String.fromCharCode(i));
type CharSet = boolean[];

const none = (): CharSet => ASCII.map(() => false);
const union = (a: CharSet, b: CharSet): CharSet => a.map((x, i) => x || b[i] === true);
const overlaps = (a: CharSet, b: CharSet): boolean => a.some((x, i) => x && b[i] === true);

type Walkable = AST.Element | AST.Alternative;

function probe(raw: string): CharSet {
  const re = new RegExp(`^(?:${raw})$`);
  return ASCII.map((c) => re.test(c));
}

/** Every character some match of the node can consume. */
function consumable(node: Walkable): CharSet {
  switch (node.type) {
    case 'Character':
    case 'CharacterSet':
    case 'CharacterClass':
    case 'ExpressionCharacterClass':
      return probe(node.raw);
    case 'Quantifier':
      return consumable(node.element);
    case 'Alternative':
      return node.elements.reduce((acc, e) => union(acc, consumable(e)), none());
    case 'Group':
    case 'CapturingGroup':
      return node.alternatives.reduce((acc, a) => union(acc, consumable(a)), none());
    default:
      return none();
  }
}

function nullable(node: Walkable): boolean {
  switch (node.type) {
    case 'Quantifier':
      return node.min === 0 || nullable(node.element);
    case 'Alternative':
      return node.elements.every(nullable);
    case 'Group':
    case 'CapturingGroup':
      return node.alternatives.some(nullable);
    case 'Assertion':
    case 'Backreference':
      return true;
    default:
      return false;
  }
}

/** The characters a match of the elements can start with. */
function firstChars(elements: readonly AST.Element[]): CharSet {
  let acc = none();
  for (const e of elements) {
    const first = e.type === 'Group' || e.type === 'CapturingGroup'
      ? e.alternatives.reduce((a, alt) => union(a, firstChars(alt.elements)), none())
      : e.type === 'Quantifier' ? firstChars([e.element]) : consumable(e);
    acc = union(acc, first);
    if (!nullable(e)) break;
  }
  return acc;
}

function children(node: Walkable): Walkable[] {
  switch (node.type) {
    case 'Alternative':
      return node.elements;
    case 'Group':
    case 'CapturingGroup':
      return node.alternatives;
    case 'Assertion':
      return node.kind === 'lookahead' || node.kind === 'lookbehind' ? node.alternatives : [];
    case 'Quantifier':
      return [node.element];
    default:
      return [];
  }
}

function* descendants(node: Walkable): Generator<Walkable> {
  for (const c of children(node)) {
    yield c;
    yield* descendants(c);
  }
}

// A sequence's elements with plain groups opened, so `(?:.*)(?:.*)` is seen as two neighbours.
function flatten(elements: readonly AST.Element[]): AST.Element[] {
  return elements.flatMap((e) =>
    ((e.type === 'Group' || e.type === 'CapturingGroup') && e.alternatives.length === 1 ? flatten(e.alternatives[0]!.elements) : [e]));
}

/**
 * Two unbounded repetitions in one sequence that can consume the same characters, with nothing
 * between them that the first cannot cross: the engine tries every split of a run between them
 * (`^/a/.*-.*$` is quadratic in the path).
 */
function ambiguousNeighbours(elements: readonly AST.Element[]): string | null {
  const flat = flatten(elements);
  for (let i = 0; i < flat.length; i++) {
    const a = flat[i]!;
    if (a.type !== 'Quantifier' || a.max !== Infinity) continue;
    const reach = consumable(a);
    for (let j = i + 1; j < flat.length; j++) {
      const b = flat[j]!;
      if (!nullable(b) && !overlaps(consumable(b), reach)) break;
      if (b.type === 'Quantifier' && b.max === Infinity && overlaps(consumable(b), reach)) {
        return `two repetitions that can match the same text side by side (${a.raw} … ${b.raw})`;
      }
    }
  }
  return null;
}

function check(node: Walkable): string | null {
  if (node.type === 'Backreference') return `a backreference (${node.raw})`;
  if (node.type === 'Assertion' && (node.kind === 'lookahead' || node.kind === 'lookbehind')) return `a ${node.kind} (${node.raw})`;
  if (node.type === 'Quantifier' && node.max > 1) {
    const inner = [...descendants(node.element)];
    const nested = inner.find((d) => d.type === 'Quantifier');
    if (nested || nullable(node.element)) return `nested quantifiers (${node.raw})`;
    for (const d of [node.element, ...inner]) {
      if ((d.type === 'Group' || d.type === 'CapturingGroup') && d.alternatives.length > 1) {
        const firsts = d.alternatives.map((alt) => firstChars(alt.elements));
        if (firsts.some((f, i) => firsts.slice(i + 1).some((g) => overlaps(f, g)))) {
          return `alternatives that can match the same text inside a repetition (${node.raw})`;
        }
      }
    }
  }
  if (node.type === 'Alternative') {
    const reason = ambiguousNeighbours(node.elements);
    if (reason) return reason;
  }
  for (const c of children(node)) {
    const reason = check(c);
    if (reason) return reason;
  }
  return null;
}

/**
 * Null when the pattern's matching time is linear in the input; otherwise what makes it not:
 * a backreference, a lookaround, nested quantifiers, alternatives that overlap under a repetition,
 * or overlapping repetitions side by side. Throws SyntaxError for what is no regular expression.
 */
export function nonLinearReason(source: string): string | null {
  const pattern = new RegExpParser({ ecmaVersion: 2025 }).parsePattern(source);
  for (const alt of pattern.alternatives) {
    const reason = check(alt);
    if (reason) return reason;
  }
  return null;
}
