import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

// The house rules of STYLE.md as data, checked against the import graph of src/. Paths are
// relative to the repository root, with forward slashes.

export type ImportGraph = Map<string, string[]>;

export interface Rule {
  name: string;
  /** Does the rule govern imports made by this file? */
  from: (file: string) => boolean;
  /** Is this import target (a src/ path or a package name) forbidden to it? */
  forbids: (target: string) => boolean;
}

const under = (...dirs: string[]) => (p: string) => dirs.some((d) => p.startsWith(d + '/'));
const pkg = (...names: string[]) => (t: string) => names.some((n) => t === n || t.startsWith(n + '/'));
const either = (...fs: ((t: string) => boolean)[]) => (t: string) => fs.some((f) => f(t));

export const RULES: readonly Rule[] = [
  { name: 'store imports nothing above it (no services/, no http/)', from: under('src/store'), forbids: under('src/services', 'src/http') },
  { name: 'services speak no HTTP (no http/, no koa)', from: under('src/services'), forbids: either(under('src/http'), pkg('koa', '@koa')) },
  {
    name: 'policy is pure (no koa, no http/, no store/, no services/, no database client)',
    from: under('src/policy'),
    forbids: either(under('src/http', 'src/store', 'src/services'), pkg('koa', '@koa', 'pg', 'ioredis')),
  },
  { name: 'routes, mcp and cli go through services (no store/)', from: under('src/http/routes', 'src/mcp', 'src/cli'), forbids: under('src/store') },
  { name: 'cli does not import http/', from: under('src/cli'), forbids: under('src/http') },
  {
    name: "oauth/ is the provider's configuration: no http/, web/, mcp/ or cli/ (its routes are http/routes/oauth.ts)",
    from: under('src/oauth'),
    forbids: under('src/http', 'src/web', 'src/mcp', 'src/cli'),
  },
  {
    name: 'nothing imports the composition root (src/main.ts and src/gateway/) but the root itself',
    from: (f) => f !== 'src/main.ts' && !under('src/gateway')(f),
    forbids: (t) => t === 'src/main.ts' || under('src/gateway')(t),
  },
  {
    name: "the policy's life is reached through src/services/policy/index.ts",
    from: (f) => !under('src/services/policy')(f),
    forbids: (t) => under('src/services/policy')(t) && t !== 'src/services/policy/index.ts',
  },
  { name: 'only services/policy/ writes the stored policy (store/casbin.ts)', from: (f) => !under('src/services/policy', 'src/store')(f), forbids: (t) => t === 'src/store/casbin.ts' },
  {
    name: 'config may be used by anything, so it imports nothing of src/ but policy/ and errors.ts',
    from: (f) => f === 'src/config.ts' || under('src/config')(f),
    forbids: (t) => t.startsWith('src/') && !under('src/policy', 'src/config')(t) && t !== 'src/errors.ts',
  },
  {
    name: 'http/ sits below the pages and the MCP server: no web/, no mcp/ (src/gateway/ hands pages in)',
    from: under('src/http'),
    forbids: under('src/web', 'src/mcp'),
  },
];

// Static imports and re-exports (type-only included: they tie modules together just the same)
// and dynamic import() calls.
const SPECIFIER = /(?:^|[\s;])(?:import|export)\s[^'"]*?\sfrom\s*['"]([^'"]+)['"]|(?:^|[\s;])import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

export function importsOf(source: string): string[] {
  const out: string[] = [];
  for (const m of source.matchAll(SPECIFIER)) out.push((m[1] ?? m[2] ?? m[3])!);
  return out;
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return walk(p);
    return /\.ts$/.test(e.name) && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** The import graph of src/: relative targets as repository paths, packages by name. */
export function readGraph(root: string): ImportGraph {
  const graph: ImportGraph = new Map();
  for (const abs of walk(resolve(root, 'src'))) {
    const file = relative(root, abs).split('\\').join('/');
    const targets = importsOf(readFileSync(abs, 'utf8')).map((s) =>
      s.startsWith('.') ? relative(root, resolve(dirname(abs), s)).split('\\').join('/') : s,
    );
    graph.set(file, targets);
  }
  return graph;
}

export function ruleViolations(graph: ImportGraph, rules: readonly Rule[] = RULES): string[] {
  const out: string[] = [];
  for (const [file, targets] of graph) {
    for (const rule of rules) {
      if (!rule.from(file)) continue;
      for (const t of targets) if (rule.forbids(t)) out.push(`rule "${rule.name}": ${file} imports ${t}`);
    }
  }
  return out;
}

/** Every cycle among src/ files, each named once by its members in order. */
export function cycles(graph: ImportGraph): string[] {
  const found = new Set<string>();
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    stack.push(file);
    for (const t of graph.get(file) ?? []) {
      if (!graph.has(t)) continue;
      if (state.get(t) === 'open') {
        const loop = stack.slice(stack.indexOf(t));
        // Rotate to start at the smallest name, so one cycle is reported once.
        const start = loop.indexOf([...loop].sort()[0]!);
        found.add([...loop.slice(start), ...loop.slice(0, start), loop[start]].join(' -> '));
      } else if (!state.has(t)) {
        visit(t);
      }
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of [...graph.keys()].sort()) if (!state.has(file)) visit(file);
  return [...found].map((c) => `rule "no import cycles": ${c}`);
}
