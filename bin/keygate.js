#!/usr/bin/env node
// Runs the build made at install (dist/, see bin/build.js): no TypeScript compiler or bundler in the
// serving process. A source edited since is rebuilt first, in a child process, so the build never
// falls out of date and its tools never stay loaded here.
import { execFileSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { cliEntry, isFresh, mainEntry } from './build.js';

if (!isFresh()) execFileSync(process.execPath, [fileURLToPath(new URL('./build.js', import.meta.url))], { stdio: 'inherit' });
const { main } = await import(pathToFileURL(cliEntry).href);
// The gateway is loaded only for `serve`: the other commands start faster without it.
const serve = async (config) => (await import(pathToFileURL(mainEntry).href)).startGateway(config);
const code = await main(process.argv.slice(2), { serve });
// Exit explicitly: open handles (a pool) must not keep a finished command alive.
process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
