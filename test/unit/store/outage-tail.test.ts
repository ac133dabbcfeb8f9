import { expect } from 'chai';
import { OutageWatch, rejectAsOutage, type OutageEvent } from '../../../src/store/outage.ts';
import { StoreUnavailableError } from '../../../src/errors.ts';

// A call sent while a store was out that fails only after the store answered again (a query held by a
// frozen database, refused once it thawed) belongs to the outage already told as ended.

const OUT = Object.assign(new Error('connection terminated'), { code: 'OUT' });
const isOutage = (err: unknown) => (err as { code?: string }).code === 'OUT';

function deferred(): { promise: Promise<string>; resolve: (v: string) => void; reject: (e: unknown) => void } {
  let resolve!: (v: string) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<string>((res, rej) => [resolve, reject] = [res, rej]);
  return { promise, resolve, reject };
}

/** Spins until the clock's millisecond turns, so the calls below start strictly after what came before. */
function nextMillisecond(): void {
  const now = Date.now();
  while (Date.now() === now) { /* a millisecond at most */ }
}

describe('an outage\'s tail', () => {
  it('a call made before the outage ended that fails after it begins no second outage; a call made after does', async () => {
    const events: OutageEvent['state'][] = [];
    // No probe and no quiet time: the first answer after a refusal ends the outage.
    const watch = new OutageWatch('database', undefined, 0);
    watch.on((e) => void events.push(e.state));
    const pending: ReturnType<typeof deferred>[] = [];
    const store = { call: () => (pending.push(deferred()), pending[pending.length - 1]!.promise) };
    rejectAsOutage(store, ['call'], 'database', isOutage, watch);

    const held = store.call();
    const failing = store.call();
    pending[1]!.reject(OUT);
    await failing.catch(() => {});
    expect(events).to.deep.equal(['began']);

    nextMillisecond();
    const answering = store.call();
    pending[2]!.resolve('ok');
    await answering;
    expect(events).to.deep.equal(['began', 'ended']);

    // The held call fails now: still an outage error for its caller, but no new outage is told.
    pending[0]!.reject(OUT);
    const err = await held.catch((e: unknown) => e);
    expect(err).to.be.instanceOf(StoreUnavailableError);
    expect(events).to.deep.equal(['began', 'ended']);

    nextMillisecond();
    const later = store.call();
    pending[3]!.reject(OUT);
    await later.catch(() => {});
    expect(events).to.deep.equal(['began', 'ended', 'began']);
  });
});
