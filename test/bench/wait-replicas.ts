// npm run bench:wait [-- --rounds N] [--seconds S] [--warmup S] [--connections C]
//
// What `redis.waitReplicas: 1` costs a key request beside 0. A Redis master with one replica is
// started on free loopback ports (test/support/engines.ts), and two gateways count in it over one
// database (DATABASE_URL): one with waitReplicas 0, one with 1. Both are loaded in turn with the same
// key, whose plan has a 1s rate window: a key with a window is never leased a block of quota, so
// every request writes its counters in Redis, and the second gateway follows each write with WAIT.
// Prints requests/s, p50 and p99 of each, and the ratios. Nothing is judged: see docs/scale-out.md.
import { cpus, totalmem } from 'node:os';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { commandExists, startReplicatedRedis } from '../support/engines.ts';
import { signUp } from '../support/http.ts';
import { createPool } from '../../src/store/db.ts';
import { startServer } from './children.ts';
import { compileBenchServer } from './compile.ts';
import { checkServices, createBenchDatabase } from './database.ts';
import { BENCH_DATABASE_URL, cpuBusy, loadLine, positive } from './machine.ts';
import { load, type LoadResult, type LoadTarget } from './load.ts';
import { median } from './report.ts';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '4' },
    seconds: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
  },
});
const ROUNDS = positive('rounds', args.rounds);
const SECONDS = positive('seconds', args.seconds);
const WARMUP = positive('warmup', args.warmup);
const CONNECTIONS = positive('connections', args.connections);
const DATABASE_URL = BENCH_DATABASE_URL;

const log = (line: string) => console.log(line);

// Everything started is stopped, and the database dropped, whatever happens: last in, first out.
const cleanups: (() => Promise<unknown>)[] = [];
let cleaning: Promise<void> | null = null;
const cleanUp = () =>
  (cleaning ??= (async () => {
    while (cleanups.length) await cleanups.pop()!().catch((e: unknown) => console.error(`cleanup failed: ${(e as Error).message}`));
  })());
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => void cleanUp().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143)));
}

/** How many WAIT commands the master has run so far (INFO commandstats). */
async function waitCalls(url: string): Promise<number> {
  const r = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    return Number(/^cmdstat_wait:calls=(\d+)/m.exec(await r.info('commandstats'))?.[1] ?? 0);
  } finally {
    r.disconnect();
  }
}

interface Side extends LoadTarget { waitReplicas: number; rounds: LoadResult[]; waits: number }

const fmt = (n: number, digits = 2) => n.toLocaleString('en', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const signed = (n: number) => `${n < 0 ? '−' : '+'}${fmt(Math.abs(n))}`;

async function main(): Promise<void> {
  if (!commandExists('redis-server')) throw new Error('redis-server is not installed (the Debian package redis-server)');
  log(`keygate bench:wait: ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`);
  log(`${ROUNDS} rounds × 2 gateways × ${SECONDS} s at ${CONNECTIONS} connections after ${WARMUP} s warm-up each`);
  const redis = await startReplicatedRedis();
  cleanups.push(() => redis.stop());
  await checkServices(DATABASE_URL, redis.url);
  const busy = await cpuBusy();
  log(`Before the run: CPU ${busy === null ? 'use unknown' : `${Math.round(busy * 100)}% busy`}, load average ${loadLine()}` +
    `${busy !== null && busy > 0.15 ? ' — something else is running; figures will be low and noisy' : ''}`);
  log(`Redis master 127.0.0.1:${redis.masterPort}, replica 127.0.0.1:${redis.replicaPort} (in sync)`);

  const compiled = await compileBenchServer();
  const db = await createBenchDatabase(DATABASE_URL);
  cleanups.push(() => db.drop());
  const sides: Side[] = [];
  // One after the other: both run the migrations at start.
  for (const waitReplicas of [0, 1]) {
    const server = await startServer(`waitReplicas ${waitReplicas}`, 'keygate', { databaseUrl: db.url, redisUrl: redis.url, waitReplicas }, null, compiled);
    cleanups.push(() => server.stop());
    sides.push({ name: `waitReplicas ${waitReplicas}`, url: `${server.url}/api/auth/get-session`, waitReplicas, rounds: [], waits: 0 });
  }

  const { client, user } = await signUp(new URL(sides[0]!.url).origin, { email: 'bench-wait@example.test', name: 'Bench wait' });
  const pool = createPool(db.url, 1);
  try {
    await pool.query("UPDATE users SET plan = 'windows' WHERE id = $1", [user.id]);
  } finally {
    await pool.end();
  }
  const created = await client.post<{ key: string; rateLimits: unknown[] }>('/api/api-keys', { name: 'bench-wait' });
  if (created.status !== 201 || created.body.rateLimits.length !== 1) throw new Error(`creating the key failed: ${created.status} ${created.text}`);
  for (const side of sides) side.headers = { 'x-api-key': created.body.key };

  log(`  warm-up, ${WARMUP} s each`);
  for (const side of sides) await load(side, { connections: CONNECTIONS, seconds: WARMUP });
  for (let r = 0; r < ROUNDS; r++) {
    // Alternating which goes first, so a drift of the machine falls on both.
    const order = r % 2 ? [...sides].reverse() : sides;
    const parts: string[] = [];
    for (const side of order) {
      const before = await waitCalls(redis.url);
      const res = await load(side, { connections: CONNECTIONS, seconds: SECONDS });
      side.waits += (await waitCalls(redis.url)) - before;
      side.rounds.push(res);
      parts.push(`${side.name}: ${Math.round(res.requestsPerSecond).toLocaleString('en')}/s p50 ${fmt(res.p50)} ms p99 ${fmt(res.p99)} ms`);
    }
    log(`  round ${r + 1}: ${parts.join(', ')}`);
  }

  const figures = sides.map((s) => ({
    name: s.name,
    rps: median(s.rounds.map((x) => x.requestsPerSecond)),
    p50: median(s.rounds.map((x) => x.p50)),
    p99: median(s.rounds.map((x) => x.p99)),
    // WAITs the master ran per request served, over the measured rounds: 0 and about 1 show that
    // each gateway did what its setting says.
    waitsPerRequest: s.waits / s.rounds.reduce((n, x) => n + x.requests, 0),
  }));
  log('\n| waitReplicas | req/s (median) | p50 ms | p99 ms | WAITs per request |');
  log('|---|---|---|---|---|');
  for (const f of figures) log(`| ${f.name.split(' ')[1]} | ${Math.round(f.rps).toLocaleString('en')} | ${fmt(f.p50)} | ${fmt(f.p99)} | ${fmt(f.waitsPerRequest)} |`);
  const [zero, one] = figures as [typeof figures[0], typeof figures[0]];
  log(`\nwaitReplicas 1 / 0: requests/s ×${fmt(one.rps / zero.rps)}, p50 ×${fmt(one.p50 / zero.p50)} (${signed(one.p50 - zero.p50)} ms), p99 ×${fmt(one.p99 / zero.p99)} (${signed(one.p99 - zero.p99)} ms)`);
  log(`After the run: load average ${loadLine()}`);
}

main()
  .then(() => cleanUp())
  .catch(async (e: unknown) => {
    console.error(e instanceof Error ? e.stack ?? e.message : String(e));
    await cleanUp();
    process.exitCode = 1;
  });
