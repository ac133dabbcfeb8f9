import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

// A file a reader can hold in mind: no source file in src/ passes 300 lines, and no line is wider
// than 140 characters (STYLE.md: split by operation before a file grows past about 300). The code
// is measured (.ts, .js, .css); the READMEs beside it are prose whose table rows and quoted headers
// cannot be wrapped, and the icon is one SVG path.

const root = resolve(import.meta.dirname, '../../..');
export const MAX_LINES = 300;
export const MAX_WIDTH = 140;
const CODE = /\.(?:ts|js|mjs|css)$/;

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : CODE.test(e.name) ? [join(dir, e.name)] : []);
}

/** Each file over the line budget and each line over the width, named with its place and size. */
export function oversized(name: string, text: string): string[] {
  const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
  const out = lines.length > MAX_LINES ? [`${name}: ${lines.length} lines (at most ${MAX_LINES})`] : [];
  lines.forEach((line, i) => {
    const width = [...line].length;
    if (width > MAX_WIDTH) out.push(`${name}:${i + 1}: ${width} characters (at most ${MAX_WIDTH})`);
  });
  return out;
}

describe('the files of src/ stay small enough to read', () => {
  it(`no source file in src/ has over ${MAX_LINES} lines or a line over ${MAX_WIDTH} characters`, () => {
    const files = filesUnder(join(root, 'src'));
    expect(files.length).to.be.greaterThan(150);
    const found = files.flatMap((f) => oversized(relative(root, f), readFileSync(f, 'utf8')));
    expect(found, `${found.length} offenders:\n${found.join('\n')}`).to.deep.equal([]);
  });

  it('the measure counts lines and characters, not bytes, and a last newline opens no line', () => {
    const exactly = 'x\n'.repeat(MAX_LINES);
    expect(oversized('a.ts', exactly)).to.deep.equal([]);
    expect(oversized('a.ts', exactly + 'y\n')).to.deep.equal([`a.ts: ${MAX_LINES + 1} lines (at most ${MAX_LINES})`]);
    expect(oversized('b.ts', `${'é'.repeat(MAX_WIDTH)}\n`)).to.deep.equal([]);
    expect(oversized('b.ts', `ok\n${'x'.repeat(MAX_WIDTH + 1)}\n`)).to.deep.equal([`b.ts:2: ${MAX_WIDTH + 1} characters (at most ${MAX_WIDTH})`]);
  });
});
