// node --import tsx test/bench/memory.ts [--keys N] [--snapshots DIR] [--connections C]
//
// (e) alone: one keygate process (compiled, started as the bench starts it, counters in
// PostgreSQL) verifying N distinct stored keys once each over 50 connections, with its RSS and V8
// heap printed every second. With --snapshots, heap snapshots of the server before the keys and
// after them, for test/bench/heap-top.ts. See test/bench/README.md.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { signUp } from '../support/http.ts';
import { startServer } from './children.ts';
import { compileBenchServer } from './compile.ts';
import { checkServices, createBenchDatabase } from './database.ts';
import { eachKeyOnce, storeKeys } from './many-keys.ts';

const { values: args } = parseArgs({ options: { keys: { type: 'string', default: '100000' }, snapshots: { type: 'string' }, connections: { type: 'string', default: '50' } } });
const KEYS = Number(args.keys);
const DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const MB = 2 ** 20;
const mb = (n: number) => `${Math.round(n / MB)} MB`;

await checkServices(DATABASE_URL, process.env.REDIS_URL || 'redis://127.0.0.1:6379');
const compiled = await compileBenchServer();
const db = await createBenchDatabase(DATABASE_URL);
const server = await startServer('(e)', 'keygate', { databaseUrl: db.url, postgresCounters: true }, null, compiled);
try {
  const { user } = await signUp(server.url, { email: 'memory@example.test', name: 'Bench' });
  const keys = await storeKeys(db.url, user.id, KEYS);
  const start = await server.stats();
  console.log(`started: RSS ${mb(start.rssNow)}, heap used ${mb(start.heapUsed)} of ${mb(start.heapTotal)}, external ${mb(start.external)}`);
  if (args.snapshots) console.log(`  snapshot ${await server.snapshot(resolve(args.snapshots, 'before.heapsnapshot'))}`);
  let peakHeap = 0;
  const sampler = setInterval(() => {
    void server.stats().then((s) => {
      peakHeap = Math.max(peakHeap, s.heapUsed);
      console.log(`  RSS ${mb(s.rssNow)} (peak ${mb(s.vmHwm ?? s.rssSampledPeak)}), heap used ${mb(s.heapUsed)} of ${mb(s.heapTotal)}, external ${mb(s.external)}`);
    }, () => {});
  }, 1000);
  const run = await eachKeyOnce(`${server.url}/api/auth/get-session`, keys, Number(args.connections));
  clearInterval(sampler);
  const end = await server.stats();
  console.log(`${KEYS.toLocaleString('en')} keys in ${run.seconds.toFixed(1)} s, answers ${[...run.statuses].map(([st, n]) => `${n}× ${st}`).join(', ')}`);
  console.log(`peak RSS ${mb(end.vmHwm ?? end.rssSampledPeak)}, RSS after ${mb(end.rssNow)}; heap used peak sampled ${mb(peakHeap)}, after ${mb(end.heapUsed)} of ${mb(end.heapTotal)}`);
  // The flushes (last use every 2 s, usage every 5 s) have run by now.
  await new Promise((r) => setTimeout(r, 6000));
  const settled = await server.stats();
  console.log(`6 s later: RSS ${mb(settled.rssNow)}, heap used ${mb(settled.heapUsed)} of ${mb(settled.heapTotal)}`);
  if (args.snapshots) console.log(`  snapshot ${await server.snapshot(resolve(args.snapshots, 'after.heapsnapshot'))}`);
} finally {
  await server.stop();
  await db.drop();
}
