// A bounded soak: the real server as a child process, mixed traffic for N minutes
// (keys, sessions, refusals, forwards, MCP calls, creates and revokes), its RSS sampled from /proc.
// Fails when the RSS floor grows by more than 10 % after warm-up (see below), or on any 5xx that
// was not injected (the upstream is asked for a 503 on purpose; those pass through).
//
//   npm run soak                # 10 minutes
//   npm run soak -- --minutes 3
//
// Needs DATABASE_URL (else the embedded PostgreSQL) and Redis at REDIS_URL (default local).
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { packageRoot } from '../../src/config.ts';
import { createTestDatabase, stopEmbedded } from '../support/db.ts';
import { startEcho } from '../support/echo.ts';
import { Client, signUp } from '../support/http.ts';
import { REDIS_URL } from '../support/redis.ts';
import { removeTempDirs, tempDir } from '../support/tmp.ts';

const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const minutes = Number(arg('minutes') ?? 10);
const workers = Number(arg('workers') ?? 8);
if (!(minutes > 0) || !(workers > 0)) throw new Error('--minutes and --workers must be positive numbers');
const durationMs = minutes * 60_000;
// The first two minutes (a fifth of a shorter run) fill caches, pools and the JIT: not growth.
const warmupMs = Math.min(120_000, durationMs / 5);
const SAMPLE_MS = 5_000;

const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const mb = (b: number) => Math.round(b / 1048576 * 10) / 10;

async function main(): Promise<number> {
  const db = await createTestDatabase('kg_soak');
  const echo = await startEcho();
  const dir = tempDir('kg-soak-');
  writeFileSync(join(dir, 'keygate.yaml'), [
    `upstream: { url: ${echo.url} }`,
    'apiKeys: { enabled: true, variant: A, prefix: key_, maxKeysPerUser: 50, maxCreatesPerDay: 1000000 }',
    'defaultApiRateLimit: 100000000',
    '',
  ].join('\n'));
  const env = { ...process.env, DATABASE_URL: db.url, REDIS_URL, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'error', KEYGATE_CONFIG: join(dir, 'keygate.yaml') };
  const server = spawn(process.execPath, [resolve(packageRoot, 'bin/keygate.js'), 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  server.stdout.on('data', (d: Buffer) => (output += d));
  server.stderr.on('data', (d: Buffer) => (output += d));
  const url = await new Promise<string>((ok, fail) => {
    const t = setInterval(() => {
      const m = /listening on (http:\/\/\S+)\n/.exec(output);
      if (m) (clearInterval(t), ok(m[1]!));
    }, 100);
    server.once('exit', (code) => (clearInterval(t), fail(new Error(`server exited ${code}:\n${output}`))));
  });

  const { client: session } = await signUp(url);
  const key = (await session.post('/api/api-keys', { name: 'soak', mcp: true })).body.key as string;
  const keyed = new Client(url).withKey(key);
  const anonymous = new Client(url);
  const badKey = new Client(url).withKey('key_' + 'A'.repeat(48));

  // Each action names its expected outcome; `injected` marks a 5xx the soak asked the upstream for.
  type Action = { name: string; run(): Promise<number>; injected?: boolean };
  const actions: Action[] = [
    { name: 'key forward', run: async () => (await keyed.get('/api/projects?page=1')).status },
    { name: 'key forward POST', run: async () => (await keyed.post('/api/projects', { name: 'p', tags: ['a', 'b'] })).status },
    { name: 'session list', run: async () => (await session.get('/api/api-keys')).status },
    { name: 'session forward', run: async () => (await session.get('/api/projects')).status },
    { name: 'anonymous refused', run: async () => (await anonymous.get('/api/projects')).status },
    { name: 'unknown key refused', run: async () => (await badKey.get('/api/projects')).status },
    { name: 'key refused admin', run: async () => (await keyed.get('/api/admin/users')).status },
    { name: 'mcp tools/list', run: async () => (await keyed.post('/api/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { accept: 'application/json, text/event-stream' })).status },
    { name: 'upstream 503', injected: true, run: async () => (await keyed.get('/api/fail/503')).status },
    {
      name: 'create and revoke',
      run: async () => {
        const made = await session.post('/api/api-keys', { name: 'short-lived' });
        if (made.status !== 201) return made.status;
        const used = await new Client(url).withKey(made.body.key as string).get('/api/projects');
        const gone = await session.delete(`/api/api-keys/${made.body.id as string}`);
        return used.status >= 500 ? used.status : gone.status;
      },
    },
    { name: 'health', run: async () => (await anonymous.get('/readyz')).status },
  ];

  const started = Date.now();
  const statuses = new Map<string, number>();
  const unexpected: string[] = [];
  const latencies: number[] = [];
  let requests = 0;
  const samples: { at: number; rss: number }[] = [];
  const sampler = setInterval(() => samples.push({ at: Date.now() - started, rss: rssOf(server.pid!) }), SAMPLE_MS);
  const worker = async (w: number) => {
    for (let i = w; Date.now() - started < durationMs; i++) {
      const action = actions[i % actions.length]!;
      const t0 = performance.now();
      let status: number;
      try {
        status = await action.run();
      } catch (e) {
        status = 0;
        unexpected.push(`${action.name}: ${(e as Error).message}`);
      }
      latencies.push(performance.now() - t0);
      requests++;
      const k = `${action.name} ${status}`;
      statuses.set(k, (statuses.get(k) ?? 0) + 1);
      if (status >= 500 && !action.injected) unexpected.push(`${action.name}: ${status}`);
    }
  };
  await Promise.all(Array.from({ length: workers }, (_, w) => worker(w)));
  clearInterval(sampler);
  samples.push({ at: Date.now() - started, rss: rssOf(server.pid!) });

  // RSS saws up and down by 100 MB as V8 collects (the heap after a full collection stayed flat,
  // within 0.3 MB over 15,000 requests of a kind, measured with --expose-gc). So growth is judged on the
  // floor the process returns to: the lowest sample of each minute (a tenth of a shorter run), the
  // median of three such floors right after warm-up against the median of the last three.
  const bucketMs = Math.min(60_000, durationMs / 10);
  const floors: { at: number; rss: number }[] = [];
  for (let from = warmupMs; from + bucketMs <= durationMs + SAMPLE_MS; from += bucketMs) {
    const inBucket = samples.filter((x) => x.at >= from && x.at < from + bucketMs).map((x) => x.rss);
    if (inBucket.length) floors.push({ at: from, rss: Math.min(...inBucket) });
  }
  const baseline = median(floors.slice(0, 3).map((f) => f.rss));
  const final = median(floors.slice(-3).map((f) => f.rss));
  const growth = (final - baseline) / baseline;
  latencies.sort((a, b) => a - b);
  const report = {
    minutes, workers, requests, perSecond: Math.round(requests / ((Date.now() - started) / 1000)),
    latencyMs: { p50: Math.round(latencies[Math.floor(latencies.length * 0.5)]! * 10) / 10, p99: Math.round(latencies[Math.floor(latencies.length * 0.99)]! * 10) / 10 },
    rssMb: { first: mb(samples[0]!.rss), floorAfterWarmup: mb(baseline), floorAtEnd: mb(final), max: mb(Math.max(...samples.map((s) => s.rss))), growthPercent: Math.round(growth * 1000) / 10, floors: floors.map((f) => `${Math.round(f.at / 1000)}s:${mb(f.rss)}MB`).join(' ') },
    outcomes: Object.fromEntries([...statuses].sort()),
    unexpected: unexpected.slice(0, 20), unexpectedCount: unexpected.length,
  };

  server.kill('SIGTERM');
  const code = await new Promise<number | null>((ok) => server.once('exit', ok));
  await echo.close();
  await db.drop();
  await stopEmbedded();
  removeTempDirs();

  const failures = [
    ...(growth > 0.1 ? [`RSS grew ${report.rssMb.growthPercent}% after warm-up (limit 10%)`] : []),
    ...(unexpected.length ? [`${unexpected.length} answers were a 5xx or no answer, not injected`] : []),
    ...(code !== 0 ? [`the server exited ${code} on SIGTERM`] : []),
  ];
  console.log(JSON.stringify({ ...report, serverExit: code, samples: samples.map((s) => `${Math.round(s.at / 1000)}s:${mb(s.rss)}MB`).join(' '), failures }, null, 2));
  console.log(failures.length ? `SOAK FAILED: ${failures.join('; ')}` : 'SOAK PASSED');
  return failures.length ? 1 : 0;
}

main().then((code) => process.exit(code), (e: Error) => {
  console.error(e);
  process.exit(1);
});
