// autocannon 8 ships no types and @types/autocannon is not a dependency: only what the bench uses.
declare module 'autocannon' {
  interface Options {
    url: string;
    connections?: number;
    /** Seconds. */
    duration?: number;
    method?: string;
    headers?: Record<string, string>;
    pipelining?: number;
    /** Seconds before a request counts as timed out. */
    timeout?: number;
    /** Stop after this many requests instead of after `duration`. */
    amount?: number;
    /** Requests sent in turn; `setupRequest` may change each one before it is sent. */
    requests?: { setupRequest?: (req: RequestParams) => RequestParams }[];
  }

  interface RequestParams { method?: string; path?: string; headers?: Record<string, string>; body?: string }

  interface Histogram { average: number; mean: number; min: number; max: number; total?: number; p50: number; p99: number }

  interface Result {
    /** Seconds actually spent loading. */
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
    resets: number;
    requests: Histogram & { sent: number; total: number };
    latency: Histogram;
  }

  interface Instance {
    stop(): void;
    /** Every response, with its latency in milliseconds (fractional, unlike the result's histogram). */
    on(event: 'response', listener: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void): this;
  }

  function autocannon(opts: Options, cb: (err: Error | null, result: Result) => void): Instance;
  export default autocannon;
  export type { Options, Result, Instance };
}
