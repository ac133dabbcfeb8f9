import { expect } from 'chai';
import { migrationsDir } from '../../../src/services/database.ts';
import { createChangeFollower } from '../../../src/services/changes.ts';
import { createPool, type Pool } from '../../../src/store/db.ts';
import { migrate } from '../../../src/store/migrate.ts';
import { signal } from '../../../src/store/notify.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';

// A reconnect is not a stampede, at the follower itself: it catches up from the
// record only when the record can say everything that was missed.

describe('the change follower', function () {
  this.timeout(30_000);
  let db: TestDatabase;
  let pool: Pool;
  before(async () => {
    db = await createTestDatabase('kg_follower');
    pool = createPool(db.url);
    await migrate(pool, migrationsDir);
  });
  after(async () => {
    await pool?.end();
    await db?.drop();
  });

  it('catches up on what was recorded since the last change heard, forgetting each key once', async () => {
    const forgotten: string[] = [];
    const follower = createChangeFollower({ pool, forget: (w) => void forgotten.push(`${w.type}:${w.id}`), marginMs: 0 });
    await follower.start();
    await signal(pool, { type: 'key', id: '00000000-0000-4000-8000-000000000001' });
    await signal(pool, { type: 'user', id: '00000000-0000-4000-8000-000000000002' });
    const caught = await follower.catchUp(0);
    expect(caught).to.include({ status: 'caught-up', changes: 2, policy: false });
    expect(forgotten).to.deep.equal(['key:00000000-0000-4000-8000-000000000001', 'user:00000000-0000-4000-8000-000000000002']);
  });

  it('after hearing a signal without a number (a sender of the earlier release, which records nothing), it says the record cannot be trusted', async () => {
    const follower = createChangeFollower({ pool, forget: () => {}, marginMs: 0 });
    await follower.start();
    follower.heard(null);
    const caught = await follower.catchUp(0);
    expect(caught.status).to.equal('cannot-reach-back');
    expect(caught.status === 'cannot-reach-back' && caught.reason).to.match(/earlier release/);
  });

  it('a day after the last signal without a number, it trusts the record again', async () => {
    let now = 1_000_000;
    const follower = createChangeFollower({ pool, forget: () => {}, marginMs: 0, nowMs: () => now });
    await follower.start();
    follower.heard(null);
    expect((await follower.catchUp(0)).status).to.equal('cannot-reach-back');
    now += 24 * 3600_000;
    expect((await follower.catchUp(0)).status).to.equal('caught-up');
  });
});
