#!/usr/bin/env node
// The CLI runs the TypeScript sources through tsx's loader: no build step between an edit and a run.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
const code = await main(process.argv.slice(2));
// Exit explicitly: open handles (a pool, a loader worker) must not keep a finished command alive,
// and the loader otherwise loses the exit code.
process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
