// `keygate policy explain`: one decision, the line that made it, and what a refused key would need.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../../config.ts';
import type { PolicySubject } from '../../policy/engine.ts';
import { formatRule, type PolicyRule } from '../../policy/rules.ts';
import { permissionsFromNames, type ScopeCatalog } from '../../policy/scopes.ts';
import { explain } from '../../services/policy/index.ts';
import { CliError, declaredPermissions, display, policiesDir, policyLoader, subjectLabel, variantFile, type CliIo } from './common.ts';

function subjectFrom(
  kind: string | undefined, permissions: string | undefined, role: string | undefined, scopes: ScopeCatalog,
): PolicySubject {
  if (kind !== 'session' && kind !== 'key' && kind !== 'anonymous') throw new CliError('--subject must be session, key or anonymous');
  if (role !== undefined && role !== 'admin' && role !== 'user') throw new CliError('--role must be admin or user');
  const perms = permissions ? permissions.split(',').map((p) => p.trim()).filter(Boolean) : [];
  if (perms.length > 0 && kind !== 'key') throw new CliError('--permissions applies to --subject key only');
  if (kind === 'anonymous' && role) throw new CliError('--role does not apply to an anonymous caller');
  const { unknown } = permissionsFromNames(scopes, perms);
  if (unknown.length > 0) {
    const declared = declaredPermissions(scopes).join(', ') || 'none';
    const verb = unknown.length > 1 ? 'are' : 'is';
    throw new CliError(`--permissions: ${unknown.join(', ')} ${verb} not declared in the scopes file (declared: ${declared})`);
  }
  return { kind, permissions: perms, role: kind === 'anonymous' ? null : (role ?? 'user') };
}

// Without --policy or --variant, explain what this installation enforces: the configured files.
function policyFiles(
  io: CliIo, v: { policy?: string; variant?: string; model?: string; scopes?: string; config?: string },
): { policy: string; model?: string; scopes?: string } {
  const model = v.model ? resolve(io.cwd, v.model) : undefined;
  const scopes = v.scopes ? resolve(io.cwd, v.scopes) : undefined;
  if (v.policy && v.variant) throw new CliError('give --policy or --variant, not both');
  if (v.policy) return { policy: resolve(io.cwd, v.policy), model, scopes };
  if (v.variant) {
    if (v.variant !== 'A' && v.variant !== 'B') throw new CliError('--variant must be A or B');
    return { policy: variantFile(policiesDir(io.cwd), v.variant), model, scopes };
  }
  if (io.policy && !v.config) return { policy: io.policy.file, model: model ?? io.policy.model };
  try {
    const config = loadConfig({ cwd: io.cwd, argv: v.config ? ['--config', v.config] : [] });
    return { policy: config.policy.file, model: model ?? config.policy.model, scopes: scopes ?? config.policy.scopes };
  } catch (e) {
    if (e instanceof ConfigError) throw new CliError(`${e.message} (or pass --policy FILE or --variant A|B)`);
    throw e;
  }
}

export async function explainCommand(args: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      subject: { type: 'string' },
      permissions: { type: 'string' },
      role: { type: 'string' },
      method: { type: 'string' },
      path: { type: 'string' },
      variant: { type: 'string' },
      policy: { type: 'string' },
      model: { type: 'string' },
      scopes: { type: 'string' },
      config: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  if (!values.method || !values.path) throw new CliError('--method and --path are required');
  const method = values.method.toUpperCase();
  const path = values.path;
  if (!path.startsWith('/') || /[?#]/.test(path)) {
    throw new CliError('--path takes a canonical path without a query string, such as /api/ai/threads');
  }

  const files = policyFiles(io, values);
  const { engine, policyPath } = await policyLoader(io)(files.policy, files.model, files.scopes);
  const subject = subjectFrom(values.subject, values.permissions, values.role, engine.scopes);
  const file = display(io, policyPath);
  const { decision: d, decidedBy, alsoMatched, decidedOn } = explain(engine, subject, method, path);
  if (values.json) {
    const line = (r: PolicyRule) => ({ id: r.id, line: r.line, text: formatRule(r) });
    io.stdout(`${JSON.stringify({
      subject: { kind: subject.kind, permissions: subject.permissions, role: subject.role },
      method,
      path,
      policy: file,
      decision: d.allowed ? 'allow' : 'deny',
      decidedBy: decidedBy ? line(decidedBy) : null,
      requiredPermission: !d.allowed && subject.kind === 'key' ? (d.requiredPermission ?? null) : null,
      alsoMatched: alsoMatched.map(line),
    })}\n`);
    return 0;
  }

  io.stdout(`${subjectLabel(subject)} ${method} ${path} (policy ${file})\n`);
  io.stdout(`decision: ${d.allowed ? 'allow' : 'deny'}\n`);
  // As the gateway decides it: letters lowered, and a suffix (`.json`) refused as the route without it.
  if (decidedOn !== path) io.stdout(`decided as: ${decidedOn}\n`);
  io.stdout(decidedBy
    ? `decided by: ${file}:${decidedBy.line}  ${formatRule(decidedBy)}\n`
    : 'decided by: no line matched; what no line allows is denied\n');
  if (!d.allowed && subject.kind === 'key') {
    io.stdout(d.requiredPermission
      ? `a key with the "${d.requiredPermission}" permission would be allowed\n`
      : 'no permission would allow a key here; only a signed-in session can\n');
  }
  if (!d.allowed && subject.kind === 'anonymous') io.stdout('the gateway answers an anonymous refusal with 401\n');
  for (const r of alsoMatched) io.stdout(`also matched: ${file}:${r.line}  ${formatRule(r)}\n`);
  return 0;
}
