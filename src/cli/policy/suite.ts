// Policy test suites: YAML files of requests and the decision each must get. Every mistake in a
// suite is reported with its file and line, never as a stack trace.
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { isMap, isScalar, LineCounter, parseDocument, type Document } from 'yaml';
import { z } from 'zod';
import type { PolicySubject } from '../../policy/engine.ts';
import { CliError, defaultModelFor, subjectLabel, variantFile } from './common.ts';

const kind = z.enum(['session', 'key', 'anonymous']);
const subjectObject = z
  .object({
    kind,
    permissions: z.array(z.string().regex(/^[a-z][a-z0-9-]*(:[a-z][a-z0-9-]*)?$/, 'a permission such as ai or reports:write')).default([]),
    role: z.enum(['user', 'admin']).nullable().default(null),
    /** `mcp`: the request an MCP tool makes on the caller's behalf; `oauth`: an OAuth access token. */
    via: z.enum(['http', 'mcp', 'oauth']).default('http'),
  })
  .strict();
const subjectHint = 'a subject is session, key, anonymous'
  + ' or { kind, permissions: [ai, reports:write], role: user|admin, via: http|mcp|oauth }';
const subject = z.union([kind, subjectObject], { error: subjectHint });
const method = z.string().regex(/^[A-Z]+$/, 'an upper-case HTTP method such as GET');

// The gateway asks about canonical paths only; a case written otherwise would test
// a request the policy never sees.
const canonicalPath = z
  .string()
  .regex(/^\//, 'a path starting with /')
  .refine((p) => !/[?#]/.test(p), 'paths are decided without a query string or fragment')
  .refine((p) => p === '/' || !/(\/\/|\/\.\.?(\/|$)|\/$)/.test(p), 'a canonical path: no //, . or .. segments, no trailing slash');

const caseSchema = z
  .object({
    name: z.string().min(1).optional(),
    subject: z.union([subject, z.array(subject).min(1)], { error: `${subjectHint}, or a list of them` }),
    method: z.union([method, z.array(method).min(1)]),
    path: canonicalPath,
    expect: z.enum(['allow', 'deny']),
    rule: z.string().min(1).optional(),
  })
  .strict();

const suiteSchema = z
  .object({
    description: z.string().optional(),
    policy: z.string().min(1).optional(),
    variant: z.enum(['A', 'B']).optional(),
    model: z.string().min(1).optional(),
    cases: z.array(caseSchema).min(1, 'a suite needs at least one case'),
  })
  .strict()
  .refine((s) => (s.policy === undefined) !== (s.variant === undefined), {
    message: 'name the policy under test with exactly one of policy (a file, relative to the suite) or variant (A or B)',
  });

export interface TestCase {
  file: string;
  line: number;
  name: string;
  subject: PolicySubject;
  method: string;
  path: string;
  expect: 'allow' | 'deny';
  rule: string | null;
}

export interface Suite {
  file: string;
  policyPath: string;
  modelPath: string;
  cases: TestCase[];
}

type YamlPath = readonly PropertyKey[];

function lineOf(doc: Document, counter: LineCounter, path: YamlPath, key?: string): number {
  for (let p = [...path]; ; p = p.slice(0, -1)) {
    const node = doc.getIn(p, true);
    if (key !== undefined && isMap(node)) {
      const pair = node.items.find((i) => isScalar(i.key) && i.key.value === key);
      const start = isScalar(pair?.key) ? pair.key.range?.[0] : undefined;
      if (start !== undefined) return counter.linePos(start).line;
    }
    const range = (node as { range?: [number, number, number] } | undefined)?.range;
    if (range) return counter.linePos(range[0]).line;
    if (p.length === 0) return 1;
    key = undefined;
  }
}

function issueMessage(issue: z.core.$ZodIssue): { path: YamlPath; key?: string; message: string }[] {
  const where = issue.path.length > 0
    ? issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('').replace(/^\./, '')
    : 'suite';
  if (issue.code === 'unrecognized_keys') {
    const fields = issue.path.includes('subject')
      ? 'subject fields are kind, permissions, role, via'
      : issue.path.length === 0
        ? 'suite fields are description, policy, variant, model, cases'
        : 'case fields are name, subject, method, path, expect, rule';
    return issue.keys.map((k) => ({ path: issue.path, key: k, message: `${where}: unknown field "${k}" (${fields})` }));
  }
  return [{ path: issue.path, message: `${where}: ${issue.message}` }];
}

const toSubject = (s: z.infer<typeof subject>): PolicySubject =>
  typeof s === 'string' ? { kind: s, permissions: [], role: null } : s.via === 'oauth'
    ? { kind: s.kind, permissions: s.permissions, role: s.role, channel: 'http', oauth: true }
    : { kind: s.kind, permissions: s.permissions, role: s.role, channel: s.via };

export function parseSuite(text: string, file: string, shownAs = file): Suite {
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter, prettyErrors: true, uniqueKeys: true });
  const yamlError = doc.errors[0];
  if (yamlError) {
    const pos = yamlError.linePos?.[0] ?? { line: 1, col: 1 };
    const reason = (yamlError.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
    throw new CliError(`${shownAs}:${pos.line}:${pos.col}: not valid YAML: ${reason}`);
  }
  const result = suiteSchema.safeParse(doc.toJS());
  if (!result.success) {
    const messages = result.error.issues.flatMap(issueMessage)
      .map((m) => `${shownAs}:${lineOf(doc, counter, m.path, m.key)}: ${m.message}`);
    throw new CliError(messages.join('\n'));
  }
  const suite = result.data;
  const policyPath = suite.variant ? variantFile(resolve(dirname(file), '..'), suite.variant) : resolve(dirname(file), suite.policy ?? '');
  const modelPath = suite.model ? resolve(dirname(file), suite.model) : defaultModelFor(policyPath);
  const cases: TestCase[] = [];
  suite.cases.forEach((c, i) => {
    const line = lineOf(doc, counter, ['cases', i]);
    const subjects = (Array.isArray(c.subject) ? c.subject : [c.subject]).map(toSubject);
    const methods = Array.isArray(c.method) ? c.method : [c.method];
    for (const s of subjects) {
      for (const m of methods) {
        const expanded = subjects.length > 1 || methods.length > 1;
        const base = c.name ?? `${subjectLabel(s)} ${m} ${c.path}`;
        const name = expanded && c.name ? `${base} [${subjectLabel(s)} ${m}]` : expanded ? `${subjectLabel(s)} ${m} ${c.path}` : base;
        cases.push({ file: shownAs, line, name, subject: s, method: m, path: c.path, expect: c.expect, rule: c.rule ?? null });
      }
    }
  });
  return { file, policyPath, modelPath, cases };
}

export async function loadSuite(file: string, shownAs = file): Promise<Suite> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    throw new CliError(`${shownAs}: cannot read the suite`);
  }
  return parseSuite(text, file, shownAs);
}
