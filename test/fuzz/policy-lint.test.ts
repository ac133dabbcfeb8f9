import { expect } from 'chai';
import fc from 'fast-check';
import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadPolicyEngine } from '../../src/policy/engine.ts';
import { runCli, withPolicyCopy } from '../unit/policy/helpers.ts';
import { fuzzParams } from './support.ts';

// `keygate policy lint` passing is an operator's signal that a file is safe to apply. Fuzzed: a
// generated line added to the shipped policy never lets lint pass on a file the engine refuses.

// A line lint should accept, then maybe one field swapped for an odd or broken value: the interesting
// lines sit at the edge between what lint accepts and what the engine refuses.
const valid = fc.record({
  subject: fc.constantFrom('key', 'session', 'anonymous', '*'),
  condition: fc.constantFrom('*', 'perm:ai', '!perm:mcp', '!role:admin', 'perm:ai perm:mcp'),
  method: fc.constantFrom('.*', '^GET$', '^(GET|HEAD)$', '^(?!(GET|HEAD)$).+$'),
  path: fc.constantFrom('/api/fuzz/**', '/api/fuzz/:id', '^/api/fuzz(/.*)?$', '/api/fuzz/*'),
  effect: fc.constantFrom('allow', 'deny'),
  id: fc.constant('fuzz.line'),
});
const odd: Record<string, fc.Arbitrary<string>> = {
  subject: fc.constantFrom('admin', 'Key', 'user:1', ''),
  condition: fc.constantFrom('perm:billing', 'via:mcp', '!', 'role:', 'role:owner', 'perm:ai,role:admin', '!!perm:ai'),
  method: fc.constantFrom('^(GET', '[', '*', 'GET', '', '(?<x)', '^GET$|', 'a{2,1}'),
  path: fc.constantFrom('^/api/(', '/api/**/x', 'api/x', '/api/[', '**', '', '/api/:', '/api/fuzz/**/**', '^(?<n>/api)$', '/api/*x'),
  effect: fc.constantFrom('Deny', 'permit', '', 'allow '),
  id: fc.constantFrom('key.api', 'public.healthz', 'fuzz line', '', 'fuzz.line,x'),
};
const anyText = fc.string({ maxLength: 10 }).map((s) => s.replace(/[\r\n#]/g, ''));
const line = fc.record({
  base: valid,
  swap: fc.option(fc.tuple(fc.constantFrom(...Object.keys(odd)), fc.boolean()), { freq: 2 }),
  odd: fc.record(odd),
  random: anyText,
  // A line can also carry a field too few or too many, or a quoted field.
  shape: fc.constantFrom('six', 'six', 'six', 'five', 'seven', 'quoted'),
}).map(({ base, swap, odd: o, random, shape }) => {
  const l: Record<string, string> = { ...base };
  if (swap) l[swap[0]] = swap[1] ? o[swap[0]]! : random;
  return { ...(l as typeof base), shape };
});

describe('fuzz: policy lint against the engine', function () {
  this.timeout(120_000);

  it('a generated line never makes lint pass on a file the engine refuses', async () => {
    const outcomes = { lintPassed: 0, lintFailed: 0 };
    await withPolicyCopy(async (dir) => {
      const policy = join(dir, 'policies/variant-a.csv');
      const { readFile, writeFile } = await import('node:fs/promises');
      const shipped = await readFile(policy, 'utf8');
      await fc.assert(fc.asyncProperty(line, async (l) => {
        const fields = [l.subject, l.condition, l.method, l.path, l.effect, l.id];
        const row = l.shape === 'five' ? fields.slice(0, 5) : l.shape === 'seven' ? [...fields, 'extra'] : fields;
        const text = `p, ${row.map((f, i) => (l.shape === 'quoted' && i === 3 ? `"${f.replace(/"/g, '""')}"` : f)).join(', ')}\n`;
        await writeFile(policy, shipped);
        await appendFile(policy, text);
        const lint = await runCli(['lint', 'policies/variant-a.csv'], dir);
        if (lint.code !== 0) {
          outcomes.lintFailed++;
          return;
        }
        outcomes.lintPassed++;
        let refusal: string | null = null;
        await loadPolicyEngine(join(dir, 'policies/model.conf'), policy).catch((e: Error) => (refusal = e.message));
        expect(refusal, `lint passed on the line ${JSON.stringify(text)}, the engine refused it`).to.equal(null);
      }), fuzzParams(60));
    });
    if (process.env.FUZZ_DEBUG) console.log(outcomes);
    expect(outcomes.lintFailed, JSON.stringify(outcomes)).to.be.at.least(1);
    expect(outcomes.lintPassed, `no generated line passed lint, so nothing was compared: ${JSON.stringify(outcomes)}`).to.be.at.least(1);
  });
});
