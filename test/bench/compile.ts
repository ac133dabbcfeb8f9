import { build } from 'esbuild';
import { resolve } from 'node:path';
import { packageRoot } from '../../src/config.ts';

/**
 * Compiles the bench's server entry (and keygate with it) as bin/build.js compiles keygate for
 * `npm start`, so the servers run without tsx, and memory is measured in the shape that serves.
 * The output sits in dist/ beside the real build: keygate finds the package root one level up.
 */
export async function compileBenchServer(): Promise<string> {
  await build({
    entryPoints: { 'bench-server': resolve(packageRoot, 'test/bench/server.ts') },
    outdir: resolve(packageRoot, 'dist'),
    chunkNames: 'bench-[name]-[hash]',
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
  });
  return resolve(packageRoot, 'dist/bench-server.js');
}
