import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

// A clone has no contract or specification document: a comment that cites one ("CONTRACT 14",
// "spec 5.4") sends a reader nowhere. Comments say the rule, or name a file in this repository.

const root = resolve(import.meta.dirname, '../../..');
const CITATION = /\bCONTRACT\b|\bspec(?: section)? \d|shared\/CONTRACT/;

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]));
}

describe('the sources and docs cite nothing a clone lacks', () => {
  it('no file in src/, docs/, policies/ or the README cites the contract or the spec', () => {
    const files = [...filesUnder(join(root, 'src')), ...filesUnder(join(root, 'docs')), join(root, 'README.md'), join(root, 'policies/README.md')];
    const found = files.flatMap((f) => readFileSync(f, 'utf8').split('\n').flatMap((line, i) => (CITATION.test(line) ? [`${relative(root, f)}:${i + 1}: ${line.trim()}`] : [])));
    expect(found, found.join('\n')).to.deep.equal([]);
  });
});
