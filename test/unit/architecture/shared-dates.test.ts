import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { utcDayStart } from '../../../src/store/counters.ts';

// utcDayStart hands every caller of one day the same Date (the key request asks on every call), so
// a caller that changed it would move the day for everyone: no code in src/ calls a Date setter.

const root = resolve(import.meta.dirname, '../../..');
const SETTER = /\.set(?:UTC)?(?:FullYear|Month|Date|Hours|Minutes|Seconds|Milliseconds|Time)\(/;

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]));
}

describe('the day start shared between callers', () => {
  it('no file in src/ calls a Date setter', () => {
    const found = filesUnder(join(root, 'src')).flatMap((f) => readFileSync(f, 'utf8').split('\n').flatMap((line, i) => (SETTER.test(line) ? [`${relative(root, f)}:${i + 1}: ${line.trim()}`] : [])));
    expect(found, found.join('\n')).to.deep.equal([]);
  });

  it('is the UTC midnight of the instant asked about, across a day boundary and back', () => {
    const a = utcDayStart(new Date('2026-11-26T23:59:59.999Z'));
    expect(a.toISOString()).to.equal('2026-11-26T00:00:00.000Z');
    expect(utcDayStart(new Date('2026-11-27T00:00:00.000Z')).toISOString()).to.equal('2026-11-27T00:00:00.000Z');
    expect(utcDayStart(new Date('2026-11-26T12:00:00.000Z')).toISOString()).to.equal('2026-11-26T00:00:00.000Z');
    expect(utcDayStart(new Date('2026-11-26T00:00:00.000Z'))).to.equal(utcDayStart(new Date('2026-11-26T18:00:00.000Z')));
  });
});
