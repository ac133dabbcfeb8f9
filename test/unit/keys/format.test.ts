import { expect } from 'chai';
import fc from 'fast-check';
import { crc32 } from 'node:zlib';
import { base62, checksum, generateKey, hasValidChecksum, keyStart } from '../../../src/services/keys/format.ts';
import { stampedQuota } from '../../../src/services/plans.ts';
import { parseConfig } from '../../../src/config.ts';

describe('key format', () => {
  it('is <prefix><43 base62 characters><6-character CRC32 checksum>', () => {
    const key = generateKey('key_');
    expect(key).to.match(/^key_[0-9A-Za-z]{49}$/);
    const body = key.slice(0, -6);
    expect(key.slice(-6)).to.equal(base62(crc32(body), 6));
  });

  it('left-pads the base62 checksum with 0', () => {
    expect(base62(0, 6)).to.equal('000000');
    expect(base62(61, 6)).to.equal('00000z');
    expect(base62(62, 6)).to.equal('000010');
    expect(base62(0xffffffff, 6)).to.have.length(6);
  });

  it('accepts every generated key, with any prefix', () => {
    fc.assert(fc.property(fc.stringMatching(/^[A-Za-z0-9_]{1,16}$/), (prefix) => hasValidChecksum(generateKey(prefix))));
  });

  it('refuses a key with any one character changed', () => {
    const key = generateKey('key_');
    fc.assert(
      fc.property(fc.nat(key.length - 1), fc.constantFrom(...'0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'), (i, c) => {
        const changed = key.slice(0, i) + c + key.slice(i + 1);
        return changed === key || !hasValidChecksum(changed);
      }),
    );
  });

  it('refuses made-up and malformed keys', () => {
    for (const k of ['', 'key_', 'key_abc', 'x'.repeat(500), generateKey('key_') + ' ', 'key_' + '-'.repeat(49)]) {
      expect(hasValidChecksum(k), k).to.equal(false);
    }
    expect(checksum('key_abc')).to.have.length(6);
  });

  it('keeps the first 12 characters as the start', () => {
    expect(keyStart('key_AbCdEfGhIjKl')).to.equal('key_AbCdEfGh');
  });
});

describe('request quota stamping', () => {
  const base = { plans: { free: {}, pro: { apiRateLimit: 5000 }, team: { apiRateLimit: 20000 } } };
  const a = parseConfig(base);
  const bOrg = parseConfig({ ...base, apiKeys: { enabled: true, variant: 'B' }, billingScope: 'organization' });
  const src = (ownerPlan: string | null, activeOrganizationPlan: string | null = null, hasActiveOrganization = false) => ({ ownerPlan, activeOrganizationPlan, hasActiveOrganization });

  it("takes the owner's plan's apiRateLimit", () => expect(stampedQuota(a, src('pro'))).to.equal(5000));
  it('falls back to defaultApiRateLimit (100) when the plan has none', () => expect(stampedQuota(a, src('free'))).to.equal(100));
  it('uses the default plan when the owner has none', () => expect(stampedQuota(parseConfig({ ...base, defaultPlan: 'pro' }), src(null))).to.equal(5000));
  it("Variant A never takes the active organization's plan", () => expect(stampedQuota(parseConfig({ ...base, billingScope: 'organization' }), src('free', 'team', true))).to.equal(100));
  it("Variant B with organization billing takes the active organization's plan", () => expect(stampedQuota(bOrg, src('free', 'team', true))).to.equal(20000));
  it("Variant B with organization billing and no active organization takes the owner's plan", () => expect(stampedQuota(bOrg, src('pro'))).to.equal(5000));
});
