import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

// The page's scripts and styles are bundled by esbuild in memory when the first page is asked
// for: a fresh clone needs `npm install && npm start` and nothing else, there is no build output
// to forget or to fall out of date, and nothing is fetched from a CDN.

const clientDir = resolve(dirname(fileURLToPath(import.meta.url)), 'client');

export interface Asset { body: Uint8Array; contentType: string }

export interface AssetBundle {
  /** By file name under /assets/. Names carry a content hash, so they can be cached for good. */
  files: Map<string, Asset>;
  urls: { signIn: string; developers: string; styles: string; icon: string };
}

const contentTypes: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

const typeOf = (name: string): string => contentTypes[name.slice(name.lastIndexOf('.'))] ?? 'application/octet-stream';

async function bundle(): Promise<AssetBundle> {
  const entries = { 'sign-in': 'sign-in.ts', developers: 'developers.ts', styles: 'styles.css' };
  const result = await build({
    absWorkingDir: clientDir,
    entryPoints: entries,
    outdir: 'out',
    entryNames: '[name]-[hash]',
    bundle: true,
    format: 'esm',
    target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
    minify: true,
    legalComments: 'none',
    charset: 'utf8',
    metafile: true,
    write: false,
    logLevel: 'silent',
  });
  const files = new Map<string, Asset>();
  for (const out of result.outputFiles) files.set(basename(out.path), { body: out.contents, contentType: typeOf(out.path) });
  // The metafile names outputs relative to absWorkingDir and says which entry each came from.
  const byEntry = new Map<string, string>();
  for (const [output, meta] of Object.entries(result.metafile.outputs)) {
    if (meta.entryPoint) byEntry.set(basename(meta.entryPoint), basename(output));
  }
  const icon = await readFile(resolve(clientDir, 'icon.svg'));
  const iconName = `icon-${createHash('sha256').update(icon).digest('hex').slice(0, 8)}.svg`;
  files.set(iconName, { body: icon, contentType: typeOf(iconName) });

  const url = (file: string) => {
    const name = byEntry.get(file);
    if (!name) throw new Error(`the page bundle has no output for ${file}`);
    return `/assets/${name}`;
  };
  return { files, urls: { signIn: url(entries['sign-in']), developers: url(entries.developers), styles: url(entries.styles), icon: `/assets/${iconName}` } };
}

/** Builds once, on first use; every later caller gets the same bundle. */
export function lazyAssets(): () => Promise<AssetBundle> {
  let built: Promise<AssetBundle> | null = null;
  return () => (built ??= bundle());
}
