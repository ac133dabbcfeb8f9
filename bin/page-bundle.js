// How the pages' scripts and styles are bundled: one description, read by the install-time build
// (bin/build.js) and by the server when it runs from the TypeScript sources (src/web/assets.ts).

/** The page entries, by name, relative to src/web/client. */
export const pageEntries = { 'sign-in': 'sign-in.ts', developers: 'developers.ts', console: 'console.ts', styles: 'styles.css' };

/** esbuild options for the page bundle, written to memory (`write: false`) with a metafile. */
export function pageBundleOptions(clientDir, outdir, logLevel) {
  return {
    absWorkingDir: clientDir,
    entryPoints: pageEntries,
    outdir,
    entryNames: '[name]-[hash]',
    bundle: true,
    format: 'esm',
    target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
    minify: true,
    legalComments: 'none',
    charset: 'utf8',
    metafile: true,
    write: false,
    logLevel,
  };
}
