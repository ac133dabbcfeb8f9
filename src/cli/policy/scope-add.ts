// `keygate policy scope add NAME --route "METHODS PATH" …`: a scope for a router in
// one command. It declares the scope, writes the lines refusing keys that lack it and the suite
// cases proving them, then runs lint and the suites, so what the operator reviews is one diff.
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { isMap, parseDocument, YAMLMap, YAMLSeq } from 'yaml';
import { compileMethodPattern, compilePathPattern, PatternError, PROBE_METHODS } from '../../policy/patterns.ts';
import type { PolicyRule } from '../../policy/rules.ts';
import { NAME, parseScopes, scopeLines, ScopesError } from '../../policy/scopes.ts';
import { CliError, defaultScopesFor, display, listFiles, policiesDir, policyLoader, type CliIo } from './common.ts';
import { lintCommand } from './lint.ts';
import { testCommand } from './test.ts';

const USAGE = 'usage: keygate policy scope add NAME --route "[ACTION] METHODS PATH" [--route …]'
  + ' [--actions read,write] [--label L] [--description D]';

// Method words an operator types, and the method pattern each becomes. `reads` and `writes` split
// every method between them, so a scope with read and write leaves no method open to keys without it.
const METHOD_WORDS: Record<string, string> = {
  '*': '.*',
  reads: '^(GET|HEAD|OPTIONS)$',
  writes: '^(?!(GET|HEAD|OPTIONS)$).+$',
};

interface Route { text: string; action: string; methods: string; methodPattern: string; path: string }

function parseRoute(text: string, actions: readonly string[]): Route {
  const words = text.trim().split(/\s+/);
  const multi = actions.length > 1;
  if (words.length !== (multi ? 3 : 2)) {
    throw new CliError(multi
      ? `--route "${text}": with several actions, write "ACTION METHODS PATH" (e.g. "write writes /api/reports/**")`
      : `--route "${text}": write "METHODS PATH" (e.g. "* /api/reports/**" or "GET,HEAD /api/reports/:id")`);
  }
  const [action = actions[0]!, methods = '', path = ''] = multi ? words : [actions[0], ...words];
  if (!actions.includes(action)) throw new CliError(`--route "${text}": "${action}" is not one of the actions ${actions.join(', ')}`);
  const listed = methods.split(/[,|]/);
  // Upper-case methods become an alternation, or a single method alone: ^(GET|HEAD)$, ^GET$.
  const spelled = listed.every((m) => /^[A-Z]+$/.test(m)) ? `^(${listed.join('|')})$`.replace(/^\^\(([A-Z]+)\)\$$/, '^$1$') : null;
  const methodPattern = METHOD_WORDS[methods] ?? spelled;
  if (!methodPattern) throw new CliError(`--route "${text}": methods are *, reads, writes, or upper-case methods such as GET,HEAD`);
  // Policy values are separated by commas and cannot be quoted: a comma would start a new field.
  if (/[,"]/.test(path)) {
    throw new CliError(`--route "${text}": a path must not contain a comma or a double quote (policy values cannot hold them);`
      + ' nothing written');
  }
  try {
    compileMethodPattern(methodPattern);
    compilePathPattern(path);
  } catch (e) {
    if (e instanceof PatternError) throw new CliError(`--route "${text}": ${e.message}`);
    throw e;
  }
  return { text, action, methods, methodPattern, path };
}

/** A path the route covers, for its suite cases: parameters filled in, `**` as the router itself. */
function examplePath(glob: string): string {
  return glob.split(' except ')[0]!.replace(/\/(\*|:[A-Za-z_][A-Za-z0-9_]*)(?=\/|$)/g, '/x-1').replace(/\/\*\*$/, '') || '/';
}

function exampleMethod(route: Route): string {
  return PROBE_METHODS.find((m) => compileMethodPattern(route.methodPattern).test(m) && (route.methods !== '*' || m === 'GET')) ?? 'GET';
}

// What would end a line of the policy file, the scopes file or a suite early, and so let the rest
// of a value become lines of its own: every C0 and C1 control (newline, carriage return, NUL,
// escape), DEL, and Unicode's line and paragraph separators.
const LINE_BREAKING = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
const codePoint = (c: string) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

/** A value typed on the command line that is written into a file as one line, or a refusal naming it. */
function oneLine(flag: string, value: string): string {
  const bad = LINE_BREAKING.exec(value);
  if (bad) {
    throw new CliError(`--${flag}: must not contain control characters or line breaks (found ${codePoint(bad[0])}); nothing written`);
  }
  return value;
}

const flow = (v: string) => (/^[\w./:-]+$/.test(v) ? v : JSON.stringify(v));

export async function scopeCommand(args: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'add') {
    throw new CliError(`${sub === undefined ? 'a scope command is required' : `unknown scope command "${sub}"`}\n${USAGE}`);
  }
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      route: { type: 'string', multiple: true }, actions: { type: 'string' }, label: { type: 'string' }, description: { type: 'string' },
    },
  });
  const [name, ...extra] = positionals;
  if (!name || extra.length > 0) throw new CliError(USAGE);
  if (!NAME.test(name)) {
    throw new CliError(`scope name "${name}": lower-case letters, digits and dashes, starting with a letter, at most 32 characters`);
  }
  const actions = values.actions ? values.actions.split(',').map((a) => a.trim()) : ['access'];
  for (const a of actions) {
    if (!NAME.test(a)) throw new CliError(`action "${a}": lower-case letters, digits and dashes, starting with a letter`);
  }
  if (!values.route?.length) throw new CliError(`at least one --route is needed\n${USAGE}`);
  for (const r of values.route) oneLine('route', r);
  const routes = values.route.map((r) => parseRoute(r, actions));
  const seen = new Map<string, Route>();
  for (const route of routes) {
    // Methods compared by what they match, so GET,HEAD and HEAD,GET are one route.
    const methods = PROBE_METHODS.filter((m) => compileMethodPattern(route.methodPattern).test(m)).join(',');
    const same = `${route.action} ${methods} ${route.path}`;
    const first = seen.get(same);
    if (first) {
      throw new CliError(`--route "${route.text}" repeats --route "${first.text}" (same action, methods and path); nothing written`);
    }
    seen.set(same, route);
  }
  const description = values.description === undefined ? undefined : oneLine('description', values.description);
  const givenLabel = values.label === undefined ? undefined : oneLine('label', values.label);

  const policyPath = io.policy?.file ?? join(policiesDir(io.cwd), 'variant-a.csv');
  const scopesPath = io.policy?.scopes ?? defaultScopesFor(policyPath);
  const loaded = await policyLoader(io)(policyPath, io.policy?.model, scopesPath);
  const { engine } = loaded;

  // Refusals first: nothing is written unless every check passes.
  if (engine.scopes.get(name)) {
    const at = `${display(io, scopesPath)}:${scopeLines(engine.scopes.text).get(name) ?? 1}`;
    throw new CliError(`scope ${name} is already declared (${at}); nothing written`);
  }
  const everything = engine.scopes.list.flatMap((s) => s.actions.map((a) => `${s.name}:${a}`));
  for (const route of routes) {
    const methods = PROBE_METHODS.filter((m) => compileMethodPattern(route.methodPattern).test(m));
    const closers = new Map<string, PolicyRule>();
    const open = methods.some((m) => {
      const key = { kind: 'key', permissions: everything, role: 'user' } as const;
      const denies = engine.matchingRules(key, m, examplePath(route.path)).filter((r) => r.effect === 'deny');
      for (const d of denies) closers.set(d.id, d);
      return denies.length === 0 && engine.decide(key, m, examplePath(route.path)).allowed;
    });
    if (!open) {
      const by = [...closers.values()].map((r) => `${display(io, policyPath)}:${r.line} (${r.id})`).join(', ')
        || 'no allowing line (default deny)';
      throw new CliError(`--route "${route.text}" is already refused to every key by ${by}: a scope there would open nothing;`
        + ' nothing written');
    }
  }

  // The lines: one deny per route, refusing keys that lack the route's action.
  const used = new Set(engine.rules.map((r) => r.id));
  const single = actions.length === 1;
  const lines = routes.map((route) => {
    const base = `key.${name}-needs-${single ? name : route.action}`;
    let id = base;
    for (let n = 2; used.has(id); n++) id = `${base}-${n}`;
    used.add(id);
    const condition = single ? `!perm:${name}` : `!perm:${name}:${route.action}`;
    return { route, id, text: `p, key, ${condition}, ${route.methodPattern}, ${route.path}, deny, ${id}` };
  });
  const label = givenLabel ?? name.charAt(0).toUpperCase() + name.slice(1);

  const scopesText = await readFile(scopesPath, 'utf8');
  const doc = parseDocument(scopesText);
  const fields: Record<string, string> = { label, ...(description ? { description } : {}) };
  const entry = new YAMLMap<string, unknown>();
  for (const [k, v] of Object.entries(fields)) entry.set(k, v);
  if (!(single && actions[0] === 'access')) {
    const list = new YAMLSeq<string>();
    for (const a of actions) list.add(a);
    list.flow = true; // `actions: [read, write]`, as the README writes it
    entry.set('actions', list);
  }
  if (!isMap(doc.get('scopes'))) doc.set('scopes', doc.createNode({}));
  doc.setIn(['scopes', name], entry);
  const newScopes = doc.toString();
  try {
    parseScopes(newScopes, display(io, scopesPath));
  } catch (e) {
    if (e instanceof ScopesError) throw new CliError(`${e.message}\nnothing written`);
    throw e;
  }

  const policyText = await readFile(policyPath, 'utf8');
  const header = `\n# Scope ${name}${description ? `: ${description}` : ''} (keygate policy scope add)\n`;
  const newPolicy = `${policyText.replace(/\n*$/, '\n')}${header}${lines.map((l) => l.text).join('\n')}\n`;

  const spelled = (a: string) => (single ? name : `${name}:${a}`);
  const suitePath = join(dirname(policyPath), 'tests', `scope-${name}.yaml`);
  if (existsSync(suitePath)) throw new CliError(`${display(io, suitePath)} exists already; nothing written`);
  const cases = lines.flatMap(({ route, id }) => {
    const method = exampleMethod(route);
    const path = examplePath(route.path);
    const others = actions.filter((a) => a !== route.action).map(spelled);
    const without = others.length ? `[key, { kind: key, permissions: [${others.join(', ')}] }]` : 'key';
    return [
      `  - { subject: { kind: key, permissions: [${spelled(route.action)}] }, method: ${method}, path: ${flow(path)}, expect: allow }`,
      `  - { subject: ${without}, method: ${method}, path: ${flow(path)}, expect: deny, rule: ${id} }`,
    ];
  });
  const suite = `# Written by keygate policy scope add ${name}: each route is allowed with the scope, refused without it.\n`
    + `policy: ../${basename(policyPath)}\ncases:\n${cases.join('\n')}\n`;

  await writeFile(scopesPath, newScopes);
  await writeFile(policyPath, newPolicy);
  await writeFile(suitePath, suite);
  io.stdout(`${display(io, scopesPath)}: declared scope ${name} (${actions.map(spelled).join(', ')})\n`);
  io.stdout(`${display(io, policyPath)}: added\n${lines.map((l) => `  ${l.text}\n`).join('')}`);
  io.stdout(`${display(io, suitePath)}: ${cases.length} cases\n`);

  const lintCode = await lintCommand([policyPath, '--scopes', scopesPath], io);
  const suites = (await listFiles(join(dirname(policyPath), 'tests'), ['.yaml', '.yml']));
  const testCode = await testCommand(suites, io);
  if (lintCode !== 0 || testCode !== 0) io.stderr(`lint or the suites fail with scope ${name}: review the files above before applying\n`);
  return lintCode === 0 && testCode === 0 ? 0 : 1;
}
