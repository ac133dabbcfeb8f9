import type { BuildOptions, LogLevel } from 'esbuild';

export declare const pageEntries: { 'sign-in': string; developers: string; console: string; styles: string };
export declare function pageBundleOptions(clientDir: string, outdir: string, logLevel: LogLevel): BuildOptions & { metafile: true; write: false };
