import { expect } from 'chai';
import type { RateLimitRule } from '../../../src/config.ts';
import { outcomeInGroup, windowCounters } from '../../../src/services/quota/decide.ts';

// The quota's decisions are pure: what to count for a request, and what a count means. Here they
// are asked directly, with no counter engine.

const now = new Date('2026-11-26T10:20:30.250Z');
const rules: RateLimitRule[] = [{ window: '1s', limit: 5 }, { window: '1m', limit: 30 }];

describe('the counters of a key request (windowCounters)', () => {
  it('counts the UTC day first, kept an hour past its end, then each window aligned to the epoch', () => {
    expect(windowCounters('k1', 100, rules, now)).to.deep.equal([
      { name: 'quota:k1', windowStart: new Date('2026-11-26T00:00:00.000Z'), limit: 100, ttlSeconds: 86_400 + 3600 },
      { name: 'quota:k1:1s', windowStart: new Date('2026-11-26T10:20:30.000Z'), limit: 5, ttlSeconds: 61 },
      { name: 'quota:k1:1m', windowStart: new Date('2026-11-26T10:20:00.000Z'), limit: 30, ttlSeconds: 120 },
    ]);
  });

  it('when the key has no short windows, then it counts the day alone', () => {
    expect(windowCounters('k1', 7, [], now).map((c) => c.name)).to.deep.equal(['quota:k1']);
  });

  it('when the instant is a window boundary, then that window starts there', () => {
    const [, second, minute] = windowCounters('k1', 100, rules, new Date('2026-11-26T10:21:00.000Z'));
    expect(second!.windowStart.toISOString()).to.equal('2026-11-26T10:21:00.000Z');
    expect(minute!.windowStart.toISOString()).to.equal('2026-11-26T10:21:00.000Z');
  });
});

describe('what each request of a group counted together sees (outcomeInGroup)', () => {
  // Three requests in one call: two fitted under every limit; the day is at 12, 1s at 5, 1m at 7.
  const result = { granted: 2, values: [12, 5, 7] };

  it('when a request is among those granted, then it sees what was left after itself, in arrival order', () => {
    const first = outcomeInGroup(100, rules, now, result, 0);
    const second = outcomeInGroup(100, rules, now, result, 1);
    expect(first).to.deep.equal({
      allowed: true, limit: 100, remaining: 89, resetSeconds: 49_170,
      windows: [
        { window: '1s', limit: 5, remaining: 1, resetSeconds: 1 },
        { window: '1m', limit: 30, remaining: 24, resetSeconds: 30 },
      ],
    });
    expect(second.allowed).to.equal(true);
    expect(second.remaining).to.equal(88);
    expect(second.windows.map((w) => w.remaining)).to.deep.equal([0, 23]);
  });

  it('when a request is past the grant, then it is refused by the first window with nothing left, and counts nothing', () => {
    const third = outcomeInGroup(100, rules, now, result, 2);
    expect(third.allowed).to.equal(false);
    expect(third.refusedBy).to.equal('1s');
    expect(third.remaining).to.equal(88);
    expect(third.windows.map((w) => w.remaining)).to.deep.equal([0, 23]);
  });

  it('when the day has nothing left, then the day refuses, even if a window is full too', () => {
    const o = outcomeInGroup(100, rules, now, { granted: 0, values: [100, 5, 30] }, 0);
    expect(o.allowed).to.equal(false);
    expect(o.remaining).to.equal(0);
    expect(o).to.not.have.property('refusedBy');
  });

  it('when only a later window is full, then that window is named', () => {
    const o = outcomeInGroup(100, rules, now, { granted: 0, values: [40, 2, 30] }, 0);
    expect(o.refusedBy).to.equal('1m');
    expect(o.windows.map((w) => w.remaining)).to.deep.equal([3, 0]);
  });

  it('when the key has no short windows, then a group answers the day alone', () => {
    const o = outcomeInGroup(3, [], now, { granted: 1, values: [3] }, 0);
    expect(o).to.deep.equal({ allowed: true, limit: 3, remaining: 0, resetSeconds: 49_170, windows: [] });
  });
});
