// Writes the OpenAPI document a gateway with the default configuration serves at /api/openapi.json
// to the file named by the first argument, for the linters in .ci/run. Built in-process: no
// database or listening server is needed to read what the routes declare.
import { writeFileSync } from 'node:fs';
import { loadConfig } from '../src/config.ts';
import { buildOpenApi } from '../src/http/openapi.ts';

const out = process.argv[2];
if (!out) throw new Error('usage: node --import tsx .ci/openapi-document.ts <file.json>');
const doc = buildOpenApi(loadConfig({ env: {}, overrides: { publicUrl: 'https://keygate.example' } }));
writeFileSync(out, JSON.stringify(doc, null, 2));
