// What a refused key lacks, searched over the compiled form's candidate lines without allocating
// per try: the request path asks this for every refused key, and a search that builds sets and
// arrays on each of its up to 256 tries made a refusal three times dearer than an allowed request.
// It tries the same sets in the same order as missingPermission (search.ts), so both name the same one.
import type { Attributes, CompiledLine } from './compiled.ts';
import { MAX_SET, MAX_TRIES } from './search.ts';

/**
 * Reusable buffers for one compiled form. Decisions are synchronous, so one search runs at a time
 * per form and the buffers are never shared between two searches in flight.
 */
export class RefusalSearch {
  private readonly atoms: string[] = [];
  private readonly picked = new Int32Array(MAX_SET);
  private size = 0;

  /**
   * @param wordsOf the `perm:` words each atom adds, spelled once per policy
   * @returns the atoms of the smallest set whose addition allows the request, or null
   */
  find(
    lines: readonly CompiledLine[], a: Attributes, held: ReadonlySet<string>, wordsOf: ReadonlyMap<string, readonly string[]>,
  ): string[] | null {
    const atoms = this.atoms;
    atoms.length = 0;
    for (const l of lines) for (const x of l.asks) if (!held.has(x) && !atoms.includes(x)) atoms.push(x);
    if (atoms.length === 0) return null;
    atoms.sort();
    let tries = 0;
    const picked = this.picked;
    for (let size = 1; size <= Math.min(MAX_SET, atoms.length); size++) {
      // Combinations of `size` indices in lexicographic order, as search.ts enumerates them.
      for (let i = 0; i < size; i++) picked[i] = i;
      this.size = size;
      for (;;) {
        if (++tries > MAX_TRIES) return null;
        if (this.allows(lines, a, wordsOf)) return Array.from(picked.subarray(0, size), (i) => atoms[i]!);
        let i = size - 1;
        while (i >= 0 && picked[i] === atoms.length - size + i) i--;
        if (i < 0) break;
        picked[i]! += 1;
        for (let j = i + 1; j < size; j++) picked[j] = picked[j - 1]! + 1;
      }
    }
    return null;
  }

  /** Whether a word is held or added by the picked atoms. */
  private has(a: Attributes, word: string, wordsOf: ReadonlyMap<string, readonly string[]>): boolean {
    if (!word.startsWith('perm:')) return word === a.role || (a.mcp && word === 'via:mcp') || (a.oauth && word === 'via:oauth');
    if (a.perms.has(word)) return true;
    for (let k = 0; k < this.size; k++) {
      const words = wordsOf.get(this.atoms[this.picked[k]!]!);
      if (words !== undefined) for (const w of words) if (w === word) return true;
    }
    return false;
  }

  private holds(l: CompiledLine, a: Attributes, wordsOf: ReadonlyMap<string, readonly string[]>): boolean {
    for (const w of l.need) if (!this.has(a, w, wordsOf)) return false;
    for (const w of l.forbid) if (this.has(a, w, wordsOf)) return false;
    return true;
  }

  /** The verdict of the candidate lines with the picked atoms added: no matching deny, some matching allow. */
  private allows(lines: readonly CompiledLine[], a: Attributes, wordsOf: ReadonlyMap<string, readonly string[]>): boolean {
    let allowed = false;
    for (const l of lines) {
      if (!l.deny && allowed) continue;
      if (!this.holds(l, a, wordsOf)) continue;
      if (l.deny) return false;
      allowed = true;
    }
    return allowed;
  }
}
