import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

// A clone has no contract, specification, issue tracker or notes: a comment, a test name or a
// shipped policy line that cites one ("CONTRACT 14", "spec 5.4", "issue 24", "notes/…") sends a
// reader nowhere. Operators read the policy files' comments in the console. Say the behaviour, or
// name a file in this repository.

const root = resolve(import.meta.dirname, '../../..');
const self = relative(root, import.meta.filename);

/** Each way of citing a document outside the repository, in any letter case. */
export const CITATIONS: readonly RegExp[] = [
  /\bcontract\b/i,
  /\bspec(?:ification)?(?:'s)?(?: section)? §?\d/i,
  /\bthe spec(?:ification)?\b/i,
  /(?<!\bRFC \d{3,5},? )\bsection \d/i,
  /\bnotes\//i,
  /\bissues? #?\d/i,
  /\bhidden (?:suite|tests?)\b/i,
  /\bthe probe\b/i,
];

const TEXT = /\.(?:ts|js|mjs|md|csv|ya?ml|conf|sql|json|html|css)$/;

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : TEXT.test(e.name) ? [join(dir, e.name)] : []);
}

function citationsIn(files: string[]): string[] {
  return files.flatMap((f) => readFileSync(f, 'utf8').split('\n').flatMap((line, i) =>
    CITATIONS.some((c) => c.test(line)) ? [`${relative(root, f)}:${i + 1}: ${line.trim()}`] : []));
}

describe('the sources, tests, policies and docs cite nothing a clone lacks', () => {
  it('no line of src/, test/, policies/, docs/ or the README cites a document outside the repository', () => {
    const files = [...['src', 'test', 'policies', 'docs'].flatMap((d) => filesUnder(join(root, d))), join(root, 'README.md')]
      .filter((f) => relative(root, f) !== self);
    expect(files.length).to.be.greaterThan(300);
    const found = citationsIn(files);
    expect(found, found.join('\n')).to.deep.equal([]);
  });

  it('the patterns catch each way of citing, in any case, and pass the words that only look alike', () => {
    const cited = ['// CONTRACT 14: keys', '# per the contract', '(spec 5.2)', 'Spec section 8', 'the spec\'s shorthand', 'section 6 says',
      'see notes/casbin-facts.md', '(issue 24)', 'Issue 11 item 2', 'the hidden suite', 'as the probe does'];
    for (const line of cited) expect(CITATIONS.some((c) => c.test(line)), line).to.equal(true);
    const plain = ['RFC 9457 section 3', 'const spec = `${ref}:${path}`', 'the keys issued today', 'a health probe', 'contracted'];
    for (const line of plain) expect(CITATIONS.some((c) => c.test(line)), line).to.equal(false);
  });
});
