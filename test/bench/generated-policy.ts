// A large policy as an operator's scopes grow it: the shipped Variant A and its two scopes, 62 more of 16
// actions (994 permissions in all, the most a scopes file may hold), and one line per route and action in every pattern form a line can
// take (globs with `*`, `:id` and `**`, `except`, anchored regular expressions; every subject kind;
// conditions on permissions, roles and channels). Deterministic: the bench and the differential
// test load the same lines.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { packageRoot } from '../../src/config.ts';

export const SCOPES = Array.from({ length: 62 }, (_, i) => `s${String(i).padStart(2, '0')}`);
export const ACTIONS = Array.from({ length: 16 }, (_, i) => `a${String(i).padStart(2, '0')}`);

/** The shipped scopes (ai, mcp) and the 64 generated ones. */
export const generatedScopesText = (): string =>
  `${readFileSync(resolve(packageRoot, 'policies/scopes.yaml'), 'utf8').trimEnd()}\n${SCOPES.map((s) => `  ${s}: { label: Router ${s}, actions: [${ACTIONS.join(', ')}] }`).join('\n')}\n`;

/** The n-th generated line: route n / 10 of scope and action, form n % 10. */
export function generatedLine(n: number): string {
  const k = Math.floor(n / 10);
  const s = SCOPES[k % SCOPES.length]!;
  const a = ACTIONS[Math.floor(k / SCOPES.length) % ACTIONS.length]!;
  const base = `/api/${s}/${a}`;
  const forms = [
    `key, perm:${s}:${a}, ^(GET|HEAD)$, ${base}/**`,
    `key, !perm:${s}:${a}, ^(?!(GET|HEAD|OPTIONS)$).+$, ${base}/:id, deny`,
    `key, perm:${s}, ^GET$, ^${base}/[0-9a-f]{8}$`,
    `*, *, ^GET$, ${base}/* except ${base}/private ${base}/admin`,
    `session, !role:admin, ^DELETE$, ${base}/**, deny`,
    `key, perm:${s}:${a}, ^POST$, ${base}/run`,
    `key, !via:oauth, .*, ${base}/oauth-only/**, deny`,
    `anonymous, *, ^(GET|HEAD)$, ${base}/public, deny`,
    `key, perm:${s}:${a} !role:admin, ^PUT$, ${base}/*/items/:item`,
    `*, *, .*, ^/api/${s}/(${a}|shared)/v[0-9]+/.+$, deny`,
  ];
  const form = forms[n % forms.length]!;
  const effect = form.endsWith(', deny') ? '' : ', allow';
  return `p, ${form}${effect}, gen.${n}`;
}

export const generatedLines = (count: number): string[] => Array.from({ length: count }, (_, n) => generatedLine(n));

export const shippedPolicyText = (): string => readFileSync(resolve(packageRoot, 'policies/variant-a.csv'), 'utf8');
export const shippedModelText = (): string => readFileSync(resolve(packageRoot, 'policies/model.conf'), 'utf8');

/** Variant A and `count` generated lines after it. */
export const generatedPolicyText = (count: number): string => `${shippedPolicyText()}\n${generatedLines(count).join('\n')}\n`;
