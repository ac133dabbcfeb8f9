#!/usr/bin/env node
// Compiles the TypeScript sources and the page bundle into dist/ once, at install (`prepare`), so
// the serving process loads neither tsx nor esbuild. `node bin/build.js` rebuilds by hand;
// bin/keygate.js rebuilds by itself when a source is newer than the build.
import { mkdirSync, readdirSync, renameSync, statSync, writeFileSync, readFileSync, existsSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { pageBundleOptions } from './page-bundle.js';

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const dist = join(root, 'dist');
export const cliEntry = join(dist, 'cli.js');
export const mainEntry = join(dist, 'main.js');
const stampFile = join(dist, 'build-stamp.json');

/** The newest modification time under src/ (the page sources included). */
export function newestSource(dir = join(root, 'src')) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** Whether dist/ was built from the sources as they are now. */
export function isFresh() {
  if (!existsSync(cliEntry) || !existsSync(mainEntry) || !existsSync(stampFile)) return false;
  try {
    return JSON.parse(readFileSync(stampFile, 'utf8')).newestSource >= newestSource();
  } catch {
    return false;
  }
}

// Written beside its final name, then renamed: a server starting while another builds never reads
// a half-written file.
function writeAtomically(path, contents) {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, contents);
  renameSync(tmp, path);
}

export async function buildAll() {
  const sourcesAt = newestSource();
  const { build } = await import('esbuild');
  const server = await build({
    entryPoints: { cli: join(root, 'src/cli/main.ts'), main: join(root, 'src/main.ts') },
    outdir: dist,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Dependencies stay in node_modules, loaded as they are; only our own code is compiled.
    packages: 'external',
    // Lazily imported modules (the MCP server) become chunks of their own, loaded when first used.
    splitting: true,
    // Beside cli.js: modules find the package root one level up from their own file.
    chunkNames: '[name]-[hash]',
    sourcemap: 'linked',
    write: false,
    logLevel: 'warning',
  });
  const clientDir = join(root, 'src/web/client');
  const pages = await build(pageBundleOptions(clientDir, join(dist, 'assets'), 'warning'));
  const manifest = {};
  for (const [output, meta] of Object.entries(pages.metafile.outputs)) {
    if (meta.entryPoint) manifest[basename(meta.entryPoint)] = basename(output);
  }
  const icon = readFileSync(join(clientDir, 'icon.svg'));
  const iconName = `icon-${createHash('sha256').update(icon).digest('hex').slice(0, 8)}.svg`;
  manifest['icon.svg'] = iconName;
  // Content-hashed pages first, then what points at them, the stamp last.
  for (const f of pages.outputFiles) writeAtomically(f.path, f.contents);
  writeAtomically(join(dist, 'assets', iconName), icon);
  writeAtomically(join(dist, 'assets', 'manifest.json'), JSON.stringify(manifest, null, 2));
  for (const f of server.outputFiles) writeAtomically(f.path, f.contents);
  writeAtomically(stampFile, JSON.stringify({ newestSource: sourcesAt, builtAt: new Date().toISOString() }));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await buildAll();
}
