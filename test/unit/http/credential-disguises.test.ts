import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { ownCredentialFinder } from '../../../src/http/caller/disguises.ts';
import { generateKey } from '../../../src/services/keys/format.ts';
import { mintToken } from '../../../src/oauth/token-format.ts';

// The bounds of the Authorization screen's unwrapping: layers, and the work spent per value.

const b64 = (s: string) => Buffer.from(s, 'latin1').toString('base64');
const wrap = (s: string, times: number): string => (times === 0 ? s : wrap(b64(s), times - 1));

describe('an Authorization value searched for a keygate key or token under wrappings', () => {
  const holdsOwn = ownCredentialFinder('key_');

  it('finds a token and a key four layers of base64 deep', () => {
    expect(holdsOwn(`Bearer ${wrap(mintToken(), 4)}`)).to.equal(true);
    expect(holdsOwn(`Bearer ${wrap(generateKey('key_'), 4)}`)).to.equal(true);
  });

  it('finds a key under its configured prefix in any letter case, and only with a checksum that holds', () => {
    const key = generateKey('key_');
    expect(holdsOwn(`Bearer KEY_${key.slice(4)}`)).to.equal(true);
    expect(holdsOwn(`Bearer ${key.slice(0, -1)}${key.endsWith('0') ? '1' : '0'}`)).to.equal(false);
    expect(ownCredentialFinder(null)(`Bearer ${key}`)).to.equal(false);
  });

  it('stops unwrapping at a bound: a value that would cost more is treated as holding one', () => {
    // Larger than any header Node accepts: unwrapping it would examine more than the bound allows.
    const value = randomBytes(150 * 1024).toString('base64');
    expect(holdsOwn(`Basic ${value}`)).to.equal(true);
  });

  it('passes ordinary values: a random 8 KiB base64 blob, a UUID, a short secret', () => {
    expect(holdsOwn(`Basic ${randomBytes(6144).toString('base64')}`)).to.equal(false);
    expect(holdsOwn('Bearer 0f8fad5b-d9cb-469f-a165-70867728950e')).to.equal(false);
    expect(holdsOwn('Bearer upstream-secret')).to.equal(false);
  });
});
