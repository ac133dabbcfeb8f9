import { spawn, execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { packageRoot } from '../../src/config.ts';

// The official MCP conformance suite needs Node 22 or later; the gateway and mocha run on 20 too.
// Node 24 is found where CI puts it (.keygate/node24), else installed there from the npm registry.

export const NODE24_DIR = join(packageRoot, '.keygate/node24');
const NODE24 = join(NODE24_DIR, 'node_modules/.bin/node');
export const CONFORMANCE = join(packageRoot, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');

/** The Node 24 binary, installing it when missing; null (with the reason) when that fails. */
export async function node24(): Promise<{ path: string } | { reason: string }> {
  if (existsSync(NODE24)) return { path: NODE24 };
  try {
    await promisify(execFile)('npm', ['install', '--prefix', NODE24_DIR, '--no-audit', '--no-fund', '--no-save', 'node@24'], { cwd: packageRoot, timeout: 240_000 });
  } catch (e) {
    return { reason: `Node 24 could not be installed under .keygate/node24: ${(e as Error).message.split('\n')[0]}` };
  }
  return existsSync(NODE24) ? { path: NODE24 } : { reason: 'npm installed node@24 but .keygate/node24/node_modules/.bin/node is missing' };
}

/** A loopback proxy that adds the key and passes Host and Origin through untouched, as the suite sends no credentials. */
export async function keyProxy(targetUrl: string, key: string): Promise<{ url: string; close(): Promise<void> }> {
  const target = new URL(targetUrl);
  const server: Server = createServer((req, res) => {
    const up = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, 'x-api-key': key } }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(up);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((ok) => {
      server.closeAllConnections();
      server.close(() => ok());
    }),
  };
}

export interface Run { code: number | null; output: string }

export interface Running {
  /** Everything the suite has printed so far, stdout and stderr together. */
  output(): string;
  /** Resolves with the first match of `pattern` in the output; rejects after `timeoutMs` or when the suite exits first. */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  /** Resolves when the suite exits (killed after the bound given to startConformance). */
  exited: Promise<Run>;
  /** Kills it now, if it still runs. */
  kill(): void;
}

/** Starts the suite's CLI with Node 24 and answers at once, for a run the test takes part in. */
export function startConformance(node: string, args: string[], timeoutMs: number): Running {
  const child = spawn(node, [CONFORMANCE, ...args], { cwd: packageRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const heard = new Set<() => void>();
  const hear = (d: Buffer) => {
    output += d.toString();
    for (const wake of [...heard]) wake();
  };
  child.stdout.on('data', hear);
  child.stderr.on('data', hear);
  const bound = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  let done = false;
  const exited = new Promise<Run>((ok) => child.on('close', (code) => {
    done = true;
    clearTimeout(bound);
    for (const wake of [...heard]) wake();
    ok({ code, output });
  }));
  const waitFor = (pattern: RegExp, ms: number) => new Promise<RegExpMatchArray>((ok, fail) => {
    const stop = (settle: () => void) => {
      heard.delete(check);
      clearTimeout(timer);
      settle();
    };
    const check = () => {
      const m = output.match(pattern);
      if (m) stop(() => ok(m));
      else if (done) stop(() => fail(new Error(`the suite exited before printing ${pattern}:\n${output.slice(-4000)}`)));
    };
    const timer = setTimeout(() => stop(() => fail(new Error(`the suite printed nothing matching ${pattern} within ${ms} ms:\n${output.slice(-4000)}`))), ms);
    heard.add(check);
    check();
  });
  return { output: () => output, waitFor, exited, kill: () => { if (!done) child.kill('SIGKILL'); } };
}

/** Runs the suite's CLI with Node 24; never throws on a failing run, answers its exit code and output. */
export function runConformance(node: string, args: string[], timeoutMs: number): Promise<Run> {
  return startConformance(node, args, timeoutMs).exited;
}

/** A Node 24 for the suite, in a `before` hook's context: the suite is skipped, saying why, without one. */
export async function node24OrSkip(ctx: Mocha.Context): Promise<string> {
  const found = await node24();
  if ('reason' in found) {
    console.warn(`      skipped: ${found.reason}`);
    ctx.skip();
  }
  return found.path;
}
