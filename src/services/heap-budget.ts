import { getHeapStatistics } from 'node:v8';

// `npm start` caps V8's old generation (--max-old-space-size in package.json). Without a cap, on a
// machine with gigabytes of memory, V8 lets the heap grow to about four times what is live before
// a full collection: 100,000 keys verified once each left 60 MB live but took the heap to 237 MB
// and the process to 316 MB. Under a cap of 512 MB V8 grows it by about 1.4 instead. The caches
// sized in the configuration must then fit well inside the cap, or the process ends out of memory
// where a larger cache was meant to help: this says so at start.

/** The heap the caches may take at most: half the limit leaves room for everything else. */
export const CACHE_SHARE_OF_HEAP = 0.5;

/** A warning when the configured caches may not fit in the heap, else null. */
export function heapBudgetWarning(cacheBytes: number, heapLimit = getHeapStatistics().heap_size_limit): string | null {
  if (cacheBytes <= heapLimit * CACHE_SHARE_OF_HEAP) return null;
  const mb = (n: number) => Math.round(n / 2 ** 20);
  return `keyCache may take ${mb(cacheBytes)} MB, more than half of the heap limit of ${mb(heapLimit)} MB: ` +
    `raise node's --max-old-space-size (npm start sets 512) to at least ${mb(cacheBytes / CACHE_SHARE_OF_HEAP)} or lower keyCache.maxBytes`;
}
