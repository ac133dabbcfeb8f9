import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

// Cached records hand the same Date to every request that reads them (a verified key's expiry), so
// a caller that changed one would change it for every later request: no code in src/ calls a Date
// setter.

const root = resolve(import.meta.dirname, '../../..');
const SETTER = /\.set(?:UTC)?(?:FullYear|Month|Date|Hours|Minutes|Seconds|Milliseconds|Time)\(/;

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]));
}

describe('Dates shared between callers', () => {
  it('no file in src/ calls a Date setter', () => {
    const found = filesUnder(join(root, 'src')).flatMap((f) => readFileSync(f, 'utf8').split('\n').flatMap((line, i) => (SETTER.test(line) ? [`${relative(root, f)}:${i + 1}: ${line.trim()}`] : [])));
    expect(found, found.join('\n')).to.deep.equal([]);
  });
});
