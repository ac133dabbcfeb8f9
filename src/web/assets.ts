import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { existsSync } from 'node:fs';
import { pageBundleOptions, pageEntries } from '../../bin/page-bundle.js';

// The page's scripts and styles. `npm install` bundles them into dist/assets/ (bin/build.js) and
// the compiled server, which lives in dist/, reads them from there, so no bundler is loaded into
// the serving process. Run from the TypeScript sources (tests, tsx), they are bundled by esbuild in
// memory when the first page is asked for. Nothing is fetched from a CDN.

const here = dirname(fileURLToPath(import.meta.url));
const clientDir = resolve(here, 'client');
const prebuiltDir = resolve(here, 'assets');

export interface Asset { body: Uint8Array; contentType: string }

export interface AssetBundle {
  /** By file name under /assets/. Names carry a content hash, so they can be cached for good. */
  files: Map<string, Asset>;
  urls: { signIn: string; developers: string; console: string; styles: string; icon: string };
}

const contentTypes: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** Where the assets are served, each under its own name: GET /assets/<name> (src/web/routes.ts). */
export const ASSETS_PATH = '/assets/';

const oneAsset = /^\/assets\/[^/]+$/;

/**
 * A request for one of the pages' assets: it needs no caller, so none is resolved for it and it is
 * decided as anonymous. A store's outage then leaves an error page its styles and icon, though the
 * browser sends the session cookie along.
 */
export function isAssetRequest(method: string, path: string): boolean {
  return (method === 'GET' || method === 'HEAD') && oneAsset.test(path);
}

const typeOf = (name: string): string => contentTypes[name.slice(name.lastIndexOf('.'))] ?? 'application/octet-stream';

const entries = pageEntries;

function urlsOf(byEntry: Map<string, string>): AssetBundle['urls'] {
  const url = (file: string) => {
    const name = byEntry.get(file);
    if (!name) throw new Error(`the page bundle has no output for ${file}`);
    return `${ASSETS_PATH}${name}`;
  };
  return {
    signIn: url(entries['sign-in']), developers: url(entries.developers), console: url(entries.console), styles: url(entries.styles),
    icon: url('icon.svg'),
  };
}

/** The bundle bin/build.js wrote at install: file names by entry in manifest.json. */
async function prebuilt(): Promise<AssetBundle> {
  const manifest = JSON.parse(await readFile(resolve(prebuiltDir, 'manifest.json'), 'utf8')) as Record<string, string>;
  const files = new Map<string, Asset>();
  for (const name of Object.values(manifest)) {
    files.set(name, { body: await readFile(resolve(prebuiltDir, name)), contentType: typeOf(name) });
  }
  return { files, urls: urlsOf(new Map(Object.entries(manifest))) };
}

async function bundle(): Promise<AssetBundle> {
  // Loaded only here: the compiled server never needs the bundler.
  const { build } = await import('esbuild');
  const result = await build(pageBundleOptions(clientDir, 'out', 'silent'));
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
  byEntry.set('icon.svg', iconName);
  return { files, urls: urlsOf(byEntry) };
}

/** Builds once, on first use; every later caller gets the same bundle. */
export function lazyAssets(): () => Promise<AssetBundle> {
  let built: Promise<AssetBundle> | null = null;
  return () => (built ??= existsSync(resolve(prebuiltDir, 'manifest.json')) ? prebuilt() : bundle());
}

/** One bundle for every router that draws pages (the settings pages, the OAuth consent page). */
export const sharedAssets = lazyAssets();
