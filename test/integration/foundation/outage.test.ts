import { expect } from 'chai';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { createPool, withTransaction } from '../../../src/store/db.ts';
import { createRedisClient, REDIS_STORE } from '../../../src/store/quota/redis-client.ts';
import { StoreUnavailableError } from '../../../src/errors.ts';
import { serverUrl } from '../../support/db.ts';

// The one outage path: the pool and the Redis client are made to reject with StoreUnavailableError
// when their server does not answer, and with nothing else. A driver error that is not an outage
// (a bad statement) passes through as it is, to be a bug's 500 rather than a 503.

const caught = (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e);

describe('store outages are translated where the pool and the Redis client are made', function () {
  this.timeout(20_000);
  let closedPort: number;
  // A server that takes a connection and hangs up at once: the driver sees its connection end.
  let hangUp: net.Server;
  before(async () => {
    const probe = net.createServer();
    await new Promise<void>((ok) => probe.listen(0, '127.0.0.1', ok));
    closedPort = (probe.address() as AddressInfo).port;
    await new Promise<void>((ok) => probe.close(() => ok()));
    hangUp = net.createServer((s) => s.destroy());
    await new Promise<void>((ok) => hangUp.listen(0, '127.0.0.1', ok));
  });
  after(async () => new Promise<void>((ok) => (hangUp ? hangUp.close(() => ok()) : ok())));

  it('a database that refuses connections: queries and transactions reject with the outage, naming the store', async () => {
    const pool = createPool(`postgres://postgres@127.0.0.1:${closedPort}/postgres`, 2, 'counter store (PostgreSQL)');
    try {
      const queried = await caught(pool.query('SELECT 1'));
      expect(queried).to.be.instanceOf(StoreUnavailableError);
      expect(queried).to.include({ code: 'SERVICE_UNAVAILABLE', store: 'counter store (PostgreSQL)' });
      expect((queried as Error).cause).to.have.property('code', 'ECONNREFUSED');
      expect(await caught(withTransaction(pool, (tx) => tx.query('SELECT 1')))).to.be.instanceOf(StoreUnavailableError);
    } finally {
      await pool.end();
    }
  });

  it('a database that hangs up: the query rejects with the outage', async () => {
    const pool = createPool(`postgres://postgres@127.0.0.1:${(hangUp.address() as AddressInfo).port}/postgres`, 1);
    try {
      const queried = await caught(pool.query('SELECT 1'));
      expect(queried).to.be.instanceOf(StoreUnavailableError);
      expect(queried).to.have.property('store', 'database');
    } finally {
      await pool.end();
    }
  });

  it('a database that answers with an error of its own: the error passes through untouched, in and out of a transaction', async () => {
    const pool = createPool(await serverUrl(), 2);
    try {
      const direct = await caught(pool.query('SELECT 1/0'));
      expect(direct).to.not.be.instanceOf(StoreUnavailableError);
      expect(direct).to.have.property('code', '22012');
      const inTx = await caught(withTransaction(pool, (tx) => tx.query('SELECT 1/0')));
      expect(inTx).to.not.be.instanceOf(StoreUnavailableError);
      expect(inTx).to.have.property('code', '22012');
      // A client taken from the pool after that still works and still translates nothing it should not.
      expect((await pool.query<{ n: number }>('SELECT 2 AS n')).rows[0]!.n).to.equal(2);
    } finally {
      await pool.end();
    }
  });

  it('a Redis that refuses connections: every command rejects with the outage', async () => {
    const client = createRedisClient({ kind: 'single', url: `redis://127.0.0.1:${closedPort}` });
    try {
      for (const sent of [client.get('k'), client.eval('return 1', 0), client.decrby('k', 2), client.ping()]) {
        const e = await caught(sent);
        expect(e).to.be.instanceOf(StoreUnavailableError);
        expect(e).to.have.property('store', REDIS_STORE);
      }
    } finally {
      client.disconnect();
    }
  });
});
