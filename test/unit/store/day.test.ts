import { expect } from 'chai';
import { DAY_TTL_SECONDS, secondsUntilNextUtcDay, utcDayStart, utcDayStartMs } from '../../../src/store/quota/day.ts';

describe('the UTC day window of the counters', () => {
  it('starts at the UTC midnight of the instant asked about, across a day boundary and back', () => {
    expect(utcDayStart(new Date('2026-11-26T23:59:59.999Z')).toISOString()).to.equal('2026-11-26T00:00:00.000Z');
    expect(utcDayStart(new Date('2026-11-27T00:00:00.000Z')).toISOString()).to.equal('2026-11-27T00:00:00.000Z');
    expect(utcDayStart(new Date('2026-11-26T12:00:00.000Z')).toISOString()).to.equal('2026-11-26T00:00:00.000Z');
    expect(utcDayStart(new Date('2024-02-29T18:30:00.000Z')).toISOString()).to.equal('2024-02-29T00:00:00.000Z');
    expect(utcDayStart(new Date('1969-12-31T06:00:00.000Z')).toISOString()).to.equal('1969-12-31T00:00:00.000Z');
    expect(utcDayStartMs(Date.parse('2026-11-26T18:00:00.000Z'))).to.equal(Date.parse('2026-11-26T00:00:00.000Z'));
  });

  it('when a caller changes the Date it was given, then no other caller of that day sees it move', () => {
    const a = utcDayStart(new Date('2026-11-26T00:00:00.000Z'));
    const b = utcDayStart(new Date('2026-11-26T18:00:00.000Z'));
    expect(a).to.not.equal(b);
    expect(a).to.deep.equal(b);
    // What a caller outside src/ (a plugin, a test) could do: the next caller still gets the day.
    a.setTime(0);
    expect(utcDayStart(new Date('2026-11-26T09:00:00.000Z')).toISOString()).to.equal('2026-11-26T00:00:00.000Z');
    expect(b.toISOString()).to.equal('2026-11-26T00:00:00.000Z');
  });

  it('resets in at least a second, and keeps a day an hour past its end', () => {
    expect(secondsUntilNextUtcDay(new Date('2026-11-26T23:59:59.999Z'))).to.equal(1);
    expect(secondsUntilNextUtcDay(new Date('2026-11-26T00:00:00.000Z'))).to.equal(86_400);
    expect(secondsUntilNextUtcDay(new Date('2026-11-26T23:00:00.500Z'))).to.equal(3600);
    expect(DAY_TTL_SECONDS).to.equal(86_400 + 3600);
  });
});
