// JUnit XML for CI systems that chart test results: one <testsuite> per YAML suite.

export interface JunitCase {
  name: string;
  file: string;
  line: number;
  failure: string | null;
}

export interface JunitSuite {
  name: string;
  cases: JunitCase[];
  /** A suite that could not be loaded at all is reported as one errored case. */
  error: string | null;
}

function escapeXml(s: string): string {
  return s.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c] ?? c);
}

export function junitXml(suites: readonly JunitSuite[]): string {
  const count = (s: JunitSuite) => (s.error ? 1 : s.cases.length);
  const failures = (s: JunitSuite) => s.cases.filter((c) => c.failure).length;
  const errors = (s: JunitSuite) => (s.error ? 1 : 0);
  const total = (f: (s: JunitSuite) => number) => suites.reduce((n, s) => n + f(s), 0);
  const out = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="keygate policy" tests="${total(count)}" failures="${total(failures)}" errors="${total(errors)}">`,
  ];
  for (const s of suites) {
    out.push(`  <testsuite name="${escapeXml(s.name)}" tests="${count(s)}" failures="${failures(s)}" errors="${errors(s)}">`);
    if (s.error) {
      out.push(
        `    <testcase classname="${escapeXml(s.name)}" name="load suite">`,
        `      <error message="${escapeXml(s.error)}"/>`,
        '    </testcase>',
      );
    }
    for (const c of s.cases) {
      const attrs = `classname="${escapeXml(s.name)}" name="${escapeXml(c.name)}" file="${escapeXml(c.file)}" line="${c.line}"`;
      if (!c.failure) {
        out.push(`    <testcase ${attrs}/>`);
        continue;
      }
      out.push(`    <testcase ${attrs}>`, `      <failure message="${escapeXml(c.failure)}"/>`, '    </testcase>');
    }
    out.push('  </testsuite>');
  }
  out.push('</testsuites>', '');
  return out.join('\n');
}
