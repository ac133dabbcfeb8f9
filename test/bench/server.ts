// One benchmark server per child process, so the load generator in the parent never shares its
// event loop, and each server's memory can be read on its own. Started by children.ts:
//   node --import tsx test/bench/server.ts <bare|keygate|proxy> <json options>
// Speaks to the parent over the IPC channel: 'ready' once listening, 'stats' on request, and exits
// on 'stop' or as soon as the parent goes away.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { writeHeapSnapshot } from 'node:v8';
import Koa from 'koa';
import { Pool as UndiciPool, type Dispatcher } from 'undici';
import { loadConfig } from '../../src/config.ts';
import { startGateway } from '../../src/main.ts';
import { PROJECTS, type ChildMessage, type ParentMessage, type ServerKind, type ServerOptions } from './protocol.ts';

const send = (m: ChildMessage) => process.send?.(m);

// Sampled as well as read from /proc: VmHWM is exact but Linux-only.
let sampledPeak = process.memoryUsage.rss();
setInterval(() => void (sampledPeak = Math.max(sampledPeak, process.memoryUsage.rss())), 50).unref();

// A client that hangs up while a forwarded answer is in flight makes Koa destroy the upstream body,
// and undici then emits 'error' on it. With no listener that is an uncaught exception, which ends
// the process. autocannon hangs up on its in-flight requests at the end of every run, so a server
// with that fault would die after its first run; count these instead and report them, and let any
// other uncaught exception end the process as usual.
let uncaughtAborts = 0;
process.on('uncaughtException', (err: Error & { code?: string }) => {
  if (err.code === 'UND_ERR_ABORTED') {
    uncaughtAborts++;
    return;
  }
  console.error(err);
  process.exit(1);
});

function vmHwmBytes(): number | null {
  try {
    const m = /^VmHWM:\s+(\d+)\s+kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

async function listen(server: Server): Promise<string> {
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((ok, fail) => server.once('error', fail).listen(0, '127.0.0.1', () => ok()));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((ok) => server.close(() => ok()));
}

/** (a) The ceiling: Koa 3 answering a small JSON on one route, nothing else. */
async function startBare(): Promise<{ url: string; close(): Promise<void> }> {
  const app = new Koa();
  app.use((ctx) => {
    // `/api/projects/<id>` too: the bench asks for random ids, as real traffic names resources.
    if (ctx.method === 'GET' && (ctx.path === '/api/projects' || ctx.path.startsWith('/api/projects/'))) ctx.body = PROJECTS;
  });
  const server = createServer(app.callback());
  return { url: await listen(server), close: () => closeServer(server) };
}

// The headers a proxy must not pass on (RFC 9110 7.6.1), as keygate's own forwarder drops them.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'trailers', 'transfer-encoding', 'upgrade', 'host']);

function forwardable(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** (d) The floor for (c): a Koa proxy with no authentication, undici Pool, body streamed back. */
async function startPlainProxy(upstream: string): Promise<{ url: string; close(): Promise<void> }> {
  const pool = new UndiciPool(new URL(upstream).origin, { connections: 128, keepAliveTimeout: 10_000 });
  const app = new Koa();
  app.use(async (ctx) => {
    const res = await pool.request({
      method: ctx.method as Dispatcher.HttpMethod,
      path: ctx.url,
      headers: { ...forwardable(ctx.req.headers), 'x-forwarded-for': ctx.ip, 'x-forwarded-host': ctx.host, 'x-forwarded-proto': ctx.protocol },
      body: ctx.method === 'GET' || ctx.method === 'HEAD' ? undefined : ctx.req,
    });
    // Koa destroys the body when the client hangs up first; undici reports that as an 'error'
    // event, which must have a listener or it ends the process.
    res.body.on('error', () => {});
    ctx.status = res.statusCode;
    for (const [name, value] of Object.entries(res.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) ctx.set(name, value);
    }
    if (res.headers['content-length'] !== undefined) ctx.length = Number(res.headers['content-length']);
    ctx.body = res.body;
  });
  const server = createServer(app.callback());
  const url = await listen(server);
  return { url, close: async () => { await closeServer(server); await pool.close(); } };
}

/** (b) and (c): the real gateway, through its composition root. */
async function startKeygate(opts: ServerOptions): Promise<{ url: string; close(): Promise<void> }> {
  const env: NodeJS.ProcessEnv = {
    DATABASE_URL: opts.databaseUrl,
    REDIS_URL: opts.postgresCounters ? undefined : opts.redisUrl,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'warn',
  };
  const config = loadConfig({
    env,
    overrides: {
      defaultPlan: 'bench',
      // `windows`: the same day with a 1s window high enough never to refuse, for target (f).
      plans: { bench: { apiRateLimit: 100_000_000 }, windows: { apiRateLimit: 100_000_000, rateLimits: [{ window: '1s', limit: 10_000_000 }] } },
      // The bench's one key drives every connection; the per-caller bound on forwards in flight
      // (default 32) would answer 429 to connections past it.
      upstream: { url: opts.upstream ?? null, maxConcurrentPerCaller: 1024 },
      ...(opts.waitReplicas !== undefined ? { redis: { waitReplicas: opts.waitReplicas } } : {}),
      ...(opts.policyFile ? { policy: { file: opts.policyFile, ...(opts.scopesFile ? { scopes: opts.scopesFile } : {}) } } : {}),
    },
  });
  const gateway = await startGateway(config);
  return { url: gateway.url, close: () => gateway.close() };
}

async function main(): Promise<void> {
  const kind = process.argv[2] as ServerKind | undefined;
  const opts = JSON.parse(process.argv[3] ?? '{}') as ServerOptions;
  let started: { url: string; close(): Promise<void> };
  if (kind === 'bare') started = await startBare();
  else if (kind === 'proxy') started = await startPlainProxy(opts.upstream ?? '');
  else if (kind === 'keygate') started = await startKeygate(opts);
  else throw new Error(`unknown server kind: ${String(kind)}`);

  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    const timer = setTimeout(() => process.exit(code), 5000);
    timer.unref();
    await started.close().catch((e: unknown) => console.error('close failed:', e));
    process.exit(code);
  };
  process.on('message', (m: ParentMessage) => {
    if (m.type === 'stats') {
      const { rss, heapUsed, heapTotal, external } = process.memoryUsage();
      send({ type: 'stats', rssNow: rss, rssSampledPeak: sampledPeak, vmHwm: vmHwmBytes(), uncaughtAborts, heapUsed, heapTotal, external });
    } else if (m.type === 'snapshot') send({ type: 'snapshot', path: writeHeapSnapshot(m.path) });
    else if (m.type === 'stop') void stop(0);
  });
  // The parent died or was killed: nobody will ever stop this server.
  process.on('disconnect', () => void stop(1));
  send({ type: 'ready', url: started.url, pid: process.pid });
}

main().catch((e: unknown) => {
  send({ type: 'failed', message: e instanceof Error ? e.stack ?? e.message : String(e) });
  process.exit(1);
});
