import { Counter, Histogram, type Registry } from 'prom-client';

// The gateway's per-request metrics, and the memo of their label sets: prom-client hashes a label
// object on every call, and the few label sets a gateway sees are looked up once and their
// children kept. Methods are caller-chosen, so each memo is bounded.

const REMEMBERED_REQUEST_LABELS = 1000;
const REMEMBERED_METHODS = 100;

export interface RequestMetrics {
  /** One answered request: its method, status, the caller's kind and how long it took. */
  observe(method: string, status: number, caller: string, seconds: number): void;
  /** A client that went away before its request was whole. */
  abort(): void;
}

export function requestMetrics(registry: Registry): RequestMetrics {
  const requests = new Counter({
    name: 'keygate_http_requests_total', help: 'HTTP requests by method, status and caller kind',
    labelNames: ['method', 'status', 'caller'], registers: [registry],
  });
  const aborts = new Counter({
    name: 'keygate_http_client_aborts_total',
    help: 'Requests whose client went away before the request was whole (a reset or close mid-body): no error of the gateway',
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'keygate_http_request_duration_seconds', help: 'Request duration', labelNames: ['method'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1], registers: [registry],
  });

  const counters = new Map<string, { inc(): void }>();
  const durations = new Map<string, { observe(v: number): void }>();
  const count = (method: string, status: number, caller: string) => {
    const k = `${method} ${status} ${caller}`;
    let child = counters.get(k);
    if (!child) {
      child = requests.labels(method, String(status), caller);
      if (counters.size < REMEMBERED_REQUEST_LABELS) counters.set(k, child);
    }
    child.inc();
  };
  const time = (method: string, seconds: number) => {
    let child = durations.get(method);
    if (!child) {
      child = duration.labels(method);
      if (durations.size < REMEMBERED_METHODS) durations.set(method, child);
    }
    child.observe(seconds);
  };
  return {
    observe(method, status, caller, seconds) {
      count(method, status, caller);
      time(method, seconds);
    },
    abort: () => aborts.inc(),
  };
}
