#!/usr/bin/env node
// The CLI runs the TypeScript sources through tsx's loader: no build step between an edit and a run.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
