// What a refused key lacks, and how a subject's permissions read as the model's attributes: shared
// by the compiled form and by the enforcer it is checked against, so the two differ only in how
// they find the lines that match.
import { subjectAttributes } from './patterns.ts';
import { heldAtoms, permissionsFromNames, spell, type ScopeCatalog } from './scopes.ts';

// Bounds the search for what a refused key lacks: sets of at most this many permissions, tried
// smallest first, from the handful the matching lines name (never every subset of every scope).
export const MAX_SET = 4;
export const MAX_TRIES = 256;

function* combinations<T>(items: readonly T[], size: number, from = 0): Generator<T[]> {
  if (size === 0) {
    yield [];
    return;
  }
  for (let i = from; i <= items.length - size; i++) for (const rest of combinations(items, size - 1, i + 1)) yield [items[i]!, ...rest];
}

/**
 * The smallest set of `S:A` atoms among `candidates` whose addition allows the request, spelled as
 * a refusal names it (`reports:write,ai`), or null. Only a permission some matching line's
 * condition names can change the answer, so the candidates are those, not every declared scope.
 */
export function missingPermission(
  catalog: ScopeCatalog | null,
  candidates: ReadonlySet<string>,
  allowedWith: (extra: readonly string[]) => boolean,
): string | null {
  const list = [...candidates].sort();
  let tries = 0;
  for (let size = 1; size <= Math.min(MAX_SET, list.length); size++) {
    for (const extra of combinations(list, size)) {
      if (++tries > MAX_TRIES) return null;
      if (allowedWith(extra)) return extra.map((atom) => spell(catalog, ...(atom.split(':') as [string, string]))).join(',');
    }
  }
  return null;
}

/** A subject's held names as `S:A` atoms: with a catalog only declared ones, without it every name. */
export function atomsOfNames(catalog: ScopeCatalog | null, names: readonly string[]): string[] {
  if (catalog) return heldAtoms(catalog, permissionsFromNames(catalog, names).permissions);
  return [...new Set(names.map((n) => (n.includes(':') ? n : `${n}:access`)))].sort();
}

/** The `perm:` words of the model's `r.attrs` for these atoms (unsafe names give none). */
export function permWords(atoms: readonly string[]): string[] {
  const words = subjectAttributes(atoms, null);
  return words === '' ? [] : words.split(' ');
}
