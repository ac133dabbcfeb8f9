import { expect } from 'chai';
import { isValidHost, quoted } from '../../../src/http/host.ts';

describe('Host-derived header values', () => {
  it('a quoted value escapes " and \\, so it cannot close the quotes and add a parameter', () => {
    expect(quoted('a"b\\c')).to.equal('"a\\"b\\\\c"');
    expect(quoted('http://x/" error="y')).to.equal('"http://x/\\" error=\\"y"');
  });

  it('a host is a name or bracketed IPv6 address with an optional numeric port, nothing else', () => {
    for (const ok of ['example.com', 'example.com:8080', '10.0.0.1', '[2001:db8::1]:443', 'a-b.c_d']) expect(isValidHost(ok), ok).to.equal(true);
    for (const bad of ['', '-a.example', 'a..b', 'a b', 'a"b', 'a\\b', 'a/b', 'a:1:2', 'a:', '[::1', 'x'.repeat(300)]) expect(isValidHost(bad), bad).to.equal(false);
  });
});
