// Policy lines as values: parsed from the CSV files (with their line numbers, for messages) or from
// the rows the database holds, and turned back into either.
import { readFile } from 'node:fs/promises';
import { compileMethodPattern, compilePathPattern, parseCondition, PatternError, SUBJECTS } from './patterns.ts';

export type Effect = 'allow' | 'deny';

export interface PolicyRule {
  /** 1-based line in the file it came from (or row number when it came from the database). */
  line: number;
  subject: string;
  condition: string;
  method: string;
  path: string;
  effect: Effect;
  id: string;
}

export interface PolicyProblem {
  line: number;
  message: string;
}

export interface ParsedPolicy {
  rules: PolicyRule[];
  problems: PolicyProblem[];
}

export const RULE_FIELDS = ['subject', 'condition', 'method', 'path', 'effect', 'id'] as const;
const RULE_ID = /^[a-z0-9][a-z0-9.-]*$/;

/** Checks one line's fields; returns the rule or the reasons it is malformed. */
export function ruleFromFields(fields: readonly string[], line: number): PolicyRule | string[] {
  const [ptype, subject = '', condition = '', method = '', path = '', effect = '', id = ''] = fields;
  if (ptype !== 'p') return [`unknown line type "${ptype ?? ''}" (only p lines: the model has no roles)`];
  if (fields.length !== RULE_FIELDS.length + 1) {
    const expected = `${RULE_FIELDS.length + 1} fields (p, ${RULE_FIELDS.join(', ')})`;
    return [`expected ${expected}, found ${fields.length}; values may not contain commas`];
  }
  const errors: string[] = [];
  const check = (what: string, fn: () => unknown) => {
    try {
      fn();
    } catch (e) {
      if (!(e instanceof PatternError)) throw e;
      errors.push(`${what}: ${e.message}`);
    }
  };
  if (subject !== '*' && !(SUBJECTS as readonly string[]).includes(subject)) {
    errors.push(`subject "${subject}" is not one of ${SUBJECTS.join(', ')} or *`);
  }
  check('condition', () => parseCondition(condition));
  check('method', () => compileMethodPattern(method));
  check('path', () => compilePathPattern(path));
  if (effect !== 'allow' && effect !== 'deny') errors.push(`effect "${effect}" is neither allow nor deny`);
  if (!RULE_ID.test(id)) errors.push(`rule id "${id}" must be lower-case letters, digits, dots and dashes`);
  if (errors.length > 0) return errors;
  return { line, subject, condition, method, path, effect: effect as Effect, id };
}

function collect(entries: Iterable<{ fields: string[]; line: number }>): ParsedPolicy {
  const rules: PolicyRule[] = [];
  const problems: PolicyProblem[] = [];
  const idLines = new Map<string, number>();
  for (const { fields, line } of entries) {
    const result = ruleFromFields(fields, line);
    if (Array.isArray(result)) {
      problems.push(...result.map((message) => ({ line, message })));
      continue;
    }
    const first = idLines.get(result.id);
    if (first !== undefined) {
      // enforceEx names the deciding line by its id, so two lines sharing one would be indistinguishable.
      problems.push({ line, message: `rule id "${result.id}" is already used on line ${first}` });
      continue;
    }
    idLines.set(result.id, line);
    rules.push(result);
  }
  return { rules, problems };
}

/** Parses policy CSV. Blank lines and lines starting with # are skipped; quoting is not supported. */
export function parsePolicy(text: string): ParsedPolicy {
  const entries: { fields: string[]; line: number }[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const trimmed = raw.trim();
    if (trimmed === '' || trimmed.startsWith('#')) return;
    entries.push({ fields: trimmed.split(',').map((f) => f.trim()), line: i + 1 });
  });
  const parsed = collect(entries);
  for (const e of entries) {
    // casbin's own CSV reader would unquote these; this one does not, so say so rather than differ.
    if (e.fields.some((f) => f.includes('"'))) parsed.problems.push({ line: e.line, message: 'quotes are not supported in policy values' });
  }
  parsed.problems.sort((a, b) => a.line - b.line);
  return parsed;
}

/** Parses rows as casbin adapters hold them: `[ptype, ...values]`; "line" is the 1-based row number. */
export function parsePolicyRows(rows: readonly (readonly string[])[]): ParsedPolicy {
  return collect(rows.map((r, i) => ({ fields: [...r], line: i + 1 })));
}

/** Problems of rules built elsewhere (a test, the database), numbered by their own line. */
export function checkRules(rules: readonly PolicyRule[]): PolicyProblem[] {
  return collect(rules.map((r) => ({ fields: ruleToCsvRow(r), line: r.line }))).problems;
}

export async function readPolicyFile(path: string): Promise<ParsedPolicy> {
  return parsePolicy(await readFile(path, 'utf8'));
}

/** `[ptype, ...values]`, the row shape casbin adapters (and casbin-pg-adapter's table) store. */
export function ruleToCsvRow(rule: PolicyRule): string[] {
  return ['p', rule.subject, rule.condition, rule.method, rule.path, rule.effect, rule.id];
}

export function formatRule(rule: PolicyRule): string {
  return ruleToCsvRow(rule).join(', ');
}

export function describeProblems(problems: readonly PolicyProblem[], file: string): string {
  return problems.map((p) => `${file}:${p.line}: ${p.message}`).join('\n');
}
