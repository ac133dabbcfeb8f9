import { expect } from 'chai';
import { judgedAt, standingOf } from '../../../src/services/keys/auth-result.ts';
import type { KeyWithOwnerRow } from '../../../src/store/apikeys.ts';

// A key can be several things at once (revoked and expired, say); the answer is the first of
// revoked, disabled, expired, a banned owner, valid, and expiry is judged at the moment of use.

const NOW = new Date('2026-06-01T12:00:00Z');
const PAST = new Date('2026-06-01T11:59:59Z');
const FUTURE = new Date('2026-06-01T12:00:01Z');

const row = (over: Partial<KeyWithOwnerRow> = {}): KeyWithOwnerRow => ({
  id: 'k1', user_id: 'u1', name: 'n', start: 'key_ab', prefix: 'key_', permissions: { reports: ['read'] },
  request_quota: 100, rate_limits: [], enabled: true, expires_at: null, revoked_at: null,
  created_at: PAST, last_used_at: null, rotated_from: null, rotated_to: null, created_cursor: '',
  owner_banned: false, owner_email: 'a@example.test', owner_name: 'A', owner_role: 'user', owner_plan: null,
  ...over,
});
const at = (r: KeyWithOwnerRow, now = NOW) => judgedAt(standingOf(r), r.expires_at, now).status;

describe('a stored key judged at a moment', () => {
  it('revoked and disabled outrank a passed expiry', () => {
    expect(at(row({ revoked_at: PAST, enabled: false, expires_at: PAST }))).to.equal('revoked');
    expect(at(row({ enabled: false, expires_at: PAST }))).to.equal('disabled');
  });

  it('a passed expiry outranks a banned owner and a valid key', () => {
    expect(at(row({ owner_banned: true, expires_at: PAST }))).to.equal('expired');
    expect(at(row({ expires_at: PAST }))).to.equal('expired');
    expect(at(row({ expires_at: NOW }))).to.equal('expired');
  });

  it('before its expiry a key is what it would be without one, judged again later from the same standing', () => {
    const r = row({ expires_at: FUTURE });
    const standing = standingOf(r);
    expect(judgedAt(standing, r.expires_at, NOW).status).to.equal('valid');
    expect(judgedAt(standing, r.expires_at, new Date(FUTURE.getTime() + 1)).status).to.equal('expired');
    expect(at(row({ owner_banned: true, expires_at: FUTURE }))).to.equal('owner-banned');
    expect(at(row())).to.equal('valid');
  });

  it('a valid standing carries the key and its owner', () => {
    const s = standingOf(row());
    expect(s.status).to.equal('valid');
    if (s.status !== 'valid') return;
    expect(s.key).to.include({ id: 'k1', userId: 'u1', requestQuota: 100 });
    expect(s.key.scopes).to.deep.equal(['reports']);
    expect(s.owner).to.include({ id: 'u1', email: 'a@example.test' });
  });

  it('keys holding the same permissions share one frozen copy and its scopes; other permissions get their own', () => {
    const held = () => ({ reports: ['read', 'write'], ai: ['access'] });
    const [a, b, c] = [standingOf(row({ permissions: held() })), standingOf(row({ id: 'k2', permissions: held() })), standingOf(row({ id: 'k3' }))];
    if (a.status !== 'valid' || b.status !== 'valid' || c.status !== 'valid') throw new Error('expected valid standings');
    // What a decision works out per permissions object (the atoms, the sets it tests) is then worked
    // out once per distinct set, not once per key in the verifier's cache.
    expect(a.key.permissions).to.equal(b.key.permissions);
    expect(a.key.scopes).to.equal(b.key.scopes).and.deep.equal(['ai', 'reports']);
    expect(c.key.permissions).to.not.equal(a.key.permissions);
    expect(c.key.permissions).to.deep.equal({ reports: ['read'] });
    expect(Object.isFrozen(a.key.permissions) && Object.isFrozen(a.key.permissions.reports) && Object.isFrozen(a.key.scopes)).to.equal(true);
  });
});
