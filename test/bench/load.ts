import { request } from 'node:http';
import autocannon from 'autocannon';

export interface LoadTarget {
  name: string;
  url: string;
  headers?: Record<string, string>;
  /**
   * Each request's path is this prefix and a random id drawn afresh (real traffic names resources);
   * the URL's own path when absent. Data, not a function, so that a target can go to another process.
   */
  randomIdsUnder?: string;
}

/** A resource id never asked before, under `prefix`. */
const randomPath = (prefix: string) => `${prefix}${Math.random().toString(16).slice(2, 12)}`;

export interface LoadResult {
  requestsPerSecond: number;
  /** Milliseconds, from every response's own latency (autocannon's histogram keeps whole ms only). */
  p50: number;
  p99: number;
  requests: number;
}

export interface LoadOptions { connections: number; seconds: number }

/** The value at quantile q of an ascending array (nearest rank). */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/**
 * Loads one target for `seconds` with `connections` keep-alive connections. Any non-2xx answer,
 * error or timeout fails the run: a benchmark of 401s would measure the wrong thing, fast.
 */
export function load(target: LoadTarget, opts: LoadOptions): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    let latencies = new Float64Array(1 << 18);
    let n = 0;
    const statuses = new Map<number, number>();
    const instance = autocannon(
      {
        url: target.url, connections: opts.connections, duration: opts.seconds, headers: target.headers, timeout: 10,
        ...(target.randomIdsUnder !== undefined
          ? { requests: [{ setupRequest: (req) => ({ ...req, path: randomPath(target.randomIdsUnder!) }) }] }
          : {}),
      },
      (err, result) => {
        if (err) return reject(err);
        if (result.non2xx || result.errors || result.timeouts) {
          const codes = [...statuses].filter(([s]) => s < 200 || s > 299).map(([s, c]) => `${c}× ${s}`).join(', ');
          return reject(new Error(`${target.name}: ${result.non2xx} non-2xx (${codes || 'none'}), ${result.errors} errors, ${result.timeouts} timeouts`));
        }
        const sorted = latencies.subarray(0, n).sort();
        resolve({ requestsPerSecond: result.requests.total / result.duration, p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), requests: result.requests.total });
      },
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (statusCode < 200 || statusCode > 299) statuses.set(statusCode, (statuses.get(statusCode) ?? 0) + 1);
      if (n === latencies.length) {
        const bigger = new Float64Array(latencies.length * 2);
        bigger.set(latencies);
        latencies = bigger;
      }
      latencies[n++] = responseTime;
    });
  });
}

/**
 * Sends `count` requests and hangs up on each before its answer is through, as impatient clients
 * and load balancers do. Resolves once all are gone; the server's own stats say how it coped.
 */
export async function hangUps(target: LoadTarget, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    await new Promise<void>((done) => {
      const req = request(target.url, { headers: target.headers }, (res) => res.destroy());
      req.on('error', () => done());
      req.on('close', () => done());
      req.end();
      setTimeout(() => req.destroy(), (i % 4) * 0.5);
    });
  }
}
