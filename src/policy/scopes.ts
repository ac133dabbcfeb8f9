// The scopes a key may hold, declared as data (policies/scopes.yaml), and the one
// spelling of held permissions every part of the gateway shares: the request attributes the policy
// matches, the names a refusal and `x-keygate-permissions` use, and how a create body is checked.
import { isMap, isScalar, LineCounter, parseDocument } from 'yaml';
import { z } from 'zod';

/** Scope name -> permitted actions, as stored on a key: `{ ai: ["access"], reports: ["read"] }`. */
export type Permissions = Record<string, string[]>;

export type Feature = 'ai' | 'mcpServer';

export interface Scope {
  name: string;
  label: string;
  description: string;
  actions: readonly string[];
  requires: Feature | null;
}

export interface ScopeCatalog {
  /** In file order: the page and `GET /api/scopes` list them so. */
  readonly list: readonly Scope[];
  get(name: string): Scope | undefined;
  /** The file's text, stored beside the policy by `policy apply`. */
  readonly text: string;
}

export class ScopesError extends Error {
  override name = 'ScopesError';
}

export const NAME = /^[a-z][a-z0-9-]{0,31}$/;
export const MAX_SCOPES = 64;
export const MAX_ACTIONS = 16;
const nameMessage = 'lower-case letters, digits and dashes, starting with a letter, at most 32 characters';

const scopeSchema = z
  .object({
    label: z.string({ error: 'required: the text of the page\'s checkbox' })
      .trim().min(1, 'must not be empty').max(80, 'at most 80 characters'),
    description: z.string().trim().max(300, 'at most 300 characters').default(''),
    actions: z
      .array(z.string().regex(NAME, nameMessage))
      .min(1, 'needs at least one action')
      .max(MAX_ACTIONS, `at most ${MAX_ACTIONS} actions`)
      .refine((a) => new Set(a).size === a.length, 'lists an action twice')
      .default(['access']),
    requires: z.enum(['ai', 'mcpServer']).optional(),
  })
  .strict();

const fileSchema = z
  .object({
    scopes: z
      .record(z.string().regex(NAME, nameMessage), scopeSchema)
      .refine((s) => Object.keys(s).length <= MAX_SCOPES, `at most ${MAX_SCOPES} scopes`)
      .nullable()
      .default({}),
  })
  .strict();

function catalogOf(scopes: Scope[], text: string): ScopeCatalog {
  const byName = new Map(scopes.map((s) => [s.name, s]));
  return { list: scopes, get: (n) => byName.get(n), text };
}

export const emptyCatalog = (): ScopeCatalog => catalogOf([], 'scopes: {}\n');

function lineOf(doc: ReturnType<typeof parseDocument>, counter: LineCounter, path: readonly PropertyKey[]): number | null {
  for (let p = [...path]; p.length > 0; p = p.slice(0, -1)) {
    const parent = doc.getIn(p.slice(0, -1), true);
    const last = p[p.length - 1];
    if (isMap(parent)) {
      const pair = parent.items.find((i) => isScalar(i.key) && i.key.value === last);
      const start = isScalar(pair?.key) ? pair.key.range?.[0] : undefined;
      if (start !== undefined) return counter.linePos(start).line;
    }
    const node = doc.getIn(p, true) as { range?: [number, number, number] } | undefined;
    if (node?.range) return counter.linePos(node.range[0]).line;
  }
  return null;
}

/**
 * Parses and checks a scopes file. A mistake is a ScopesError whose first line names the file, the
 * line and the field (`scopes.reports.actions.0: …`), so a start that refuses it says where to look.
 */
export function parseScopes(text: string, source = 'scopes.yaml'): ScopeCatalog {
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter, uniqueKeys: true });
  const yamlError = doc.errors[0];
  if (yamlError) {
    const line = yamlError.linePos?.[0]?.line ?? 1;
    // The line is told once, in front; the parser's own "at line L, column C" is dropped.
    const message = (yamlError.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
    throw new ScopesError(`${source}:${line}: not valid YAML: ${message}`);
  }
  const result = fileSchema.safeParse(doc.toJS() ?? {});
  if (!result.success) {
    const messages = result.error.issues.map((issue) => {
      const path = issue.path.map(String);
      const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
      const field = [...path, ...(keys.length === 1 ? keys : [])].join('.') || '(file)';
      const line = lineOf(doc, counter, keys.length === 1 ? [...issue.path, keys[0]!] : issue.path);
      const message = issue.code === 'unrecognized_keys'
        ? `unknown field${keys.length > 1 ? `s ${keys.join(', ')}` : ''} (a scope has label, description, actions, requires)`
        : issue.code === 'invalid_key' ? `a scope name must be ${nameMessage}` : issue.message;
      return `${source}${line ? `:${line}` : ''}: ${field}: ${message}`;
    });
    throw new ScopesError(messages.join('\n'));
  }
  const scopes = Object.entries(result.data.scopes ?? {}).map(([name, s]) => ({
    name, label: s.label, description: s.description, actions: s.actions, requires: s.requires ?? null,
  }));
  return catalogOf(scopes, text);
}

/** The line a scope is declared on, for lint's warnings. */
export function scopeLines(text: string): Map<string, number> {
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter });
  const out = new Map<string, number>();
  const scopes = doc.get('scopes', true);
  if (!isMap(scopes)) return out;
  for (const item of scopes.items) {
    if (isScalar(item.key) && typeof item.key.value === 'string' && item.key.range) {
      out.set(item.key.value, counter.linePos(item.key.range[0]).line);
    }
  }
  return out;
}

/** `S` for a scope whose only action is `access`, `S:A` otherwise. */
export function spell(catalog: ScopeCatalog | null, scope: string, action: string): string {
  const declared = catalog?.get(scope);
  const accessOnly = declared ? declared.actions.length === 1 && declared.actions[0] === 'access' : action === 'access';
  return accessOnly && action === 'access' ? scope : `${scope}:${action}`;
}

/**
 * Held permissions as `S:A` atoms, in a stable order. With a catalog, only declared scopes and
 * actions count: a key keeps a scope that was later removed, and it then opens nothing.
 */
export function heldAtoms(catalog: ScopeCatalog | null, permissions: Permissions): string[] {
  const atoms: string[] = [];
  for (const [scope, actions] of Object.entries(permissions)) {
    if (!Array.isArray(actions)) continue;
    const declared = catalog?.get(scope);
    if (catalog && !declared) continue;
    for (const a of actions) if (typeof a === 'string' && (!declared || declared.actions.includes(a))) atoms.push(`${scope}:${a}`);
  }
  return [...new Set(atoms)].sort();
}

/** The held permissions in the spelling of `x-keygate-permissions` and `requiredPermission`. */
export function permissionNames(catalog: ScopeCatalog | null, permissions: Permissions): string[] {
  return heldAtoms(catalog, permissions).map((atom) => {
    const [scope = '', action = ''] = atom.split(':');
    return spell(catalog, scope, action);
  });
}

/**
 * Reads `ai`, `reports:read` (the CLI's and the suites' spelling) into a permissions map. A bare
 * scope name means its `access` action, or its only action when it has one.
 */
export function permissionsFromNames(
  catalog: ScopeCatalog | null, names: readonly string[],
): { permissions: Permissions; unknown: string[] } {
  // Without a prototype: a scope named `constructor` would otherwise find Object's own member.
  const permissions: Permissions = Object.create(null);
  const unknown: string[] = [];
  for (const name of names) {
    const [scope = '', explicit, ...rest] = name.split(':');
    const declared = catalog?.get(scope);
    const action = explicit ?? (declared && declared.actions.length === 1 ? declared.actions[0]! : 'access');
    if (rest.length > 0 || !NAME.test(scope) || !NAME.test(action) || (catalog && (!declared || !declared.actions.includes(action)))) {
      unknown.push(name);
      continue;
    }
    (permissions[scope] ??= []).includes(action) || permissions[scope].push(action);
  }
  return { permissions, unknown };
}

/** Which features are on (the gateway's surface, src/config.ts). */
export interface FeatureSwitches { ai: boolean; mcp: boolean }

// A scope names its feature as the configuration file does (`requires: mcpServer`).
const SWITCH: Record<Feature, keyof FeatureSwitches> = { ai: 'ai', mcpServer: 'mcp' };

export const featureOn = (scope: Scope, features: FeatureSwitches): boolean => scope.requires === null || features[SWITCH[scope.requires]];

/** What a refusal says a key needs, in the words of the scope's label: "AI access", "Reports (write)". */
export function permissionWords(catalog: ScopeCatalog | null, names: readonly string[]): string {
  const words = names.map((n) => {
    const [scope = '', action] = n.split(':');
    const declared = catalog?.get(scope);
    const base = declared ? declared.label.replace(/^allow\s+/i, '') : scope;
    return action ? `${base} (${action})` : base;
  });
  return words.join(' and ');
}

export interface GrantInput { ai?: boolean; mcp?: boolean; permissions?: Record<string, string[]> }

export type GrantResult =
  | { ok: true; permissions: Permissions }
  | { ok: false; errors: { path: string; message: string }[] }
  | { ok: false; featureOff: Scope };

/**
 * What a create body asks for, checked against the declared scopes: `ai: true` and `mcp: true`
 * are the API's shorthand for `{ ai: ["access"] }` and `{ mcp: ["access"] }`. Every mistake is
 * named by its field; a scope whose feature is off is refused as such, after the mistakes.
 */
export function resolveGrant(catalog: ScopeCatalog, features: FeatureSwitches, input: GrantInput): GrantResult {
  const errors: { path: string; message: string }[] = [];
  const wanted = new Map<string, { path: string; actions: string[] }>();
  for (const [scope, actions] of Object.entries(input.permissions ?? {})) wanted.set(scope, { path: `permissions.${scope}`, actions });
  for (const shorthand of ['ai', 'mcp'] as const) {
    // The shorthand and permissions must say the same thing: `mcp: false` beside
    // `permissions.mcp` was read as a grant, so a client that shows the flag showed the wrong one.
    const listed = input.permissions?.[shorthand];
    if (input[shorthand] === false && listed !== undefined) {
      errors.push({ path: shorthand, message: `is false, but permissions.${shorthand} grants it; send one or make them agree` });
      continue;
    }
    if (input[shorthand] === true && listed !== undefined && !listed.includes('access')) {
      const message = `is true (${shorthand}: ["access"]), but permissions.${shorthand} leaves "access" out; send one or make them agree`;
      errors.push({ path: shorthand, message });
      continue;
    }
    if (input[shorthand] !== true) continue;
    const entry = wanted.get(shorthand) ?? { path: shorthand, actions: [] };
    entry.actions = [...entry.actions, 'access'];
    wanted.set(shorthand, entry);
  }
  const permissions: Permissions = Object.create(null);
  let featureOff: Scope | null = null;
  for (const [name, { path, actions }] of wanted) {
    const scope = catalog.get(name);
    if (!scope) {
      const declared = catalog.list.length ? ` (declared: ${catalog.list.map((s) => s.name).join(', ')})` : '';
      errors.push({ path, message: `"${name}" is not a scope this server declares${declared}` });
      continue;
    }
    if (actions.length === 0) {
      errors.push({ path, message: `needs at least one action (${scope.actions.join(', ')}); leave the scope out to grant nothing` });
      continue;
    }
    const undeclared = actions.filter((a) => !scope.actions.includes(a));
    if (undeclared.length > 0) {
      const quoted = undeclared.map((a) => `"${a}"`).join(', ');
      errors.push({ path, message: `${quoted} is not an action of ${name} (${scope.actions.join(', ')})` });
      continue;
    }
    if (!featureOn(scope, features)) featureOff ??= scope;
    permissions[name] = scope.actions.filter((a) => actions.includes(a));
  }
  if (errors.length > 0) return { ok: false, errors };
  if (featureOff) return { ok: false, featureOff };
  return { ok: true, permissions };
}
