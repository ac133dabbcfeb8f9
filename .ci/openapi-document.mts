// Writes the OpenAPI document a gateway with the default configuration serves at /api/openapi.json
// to the file named by the first argument, for the linters in .ci/run. A real gateway (its own
// database on DATABASE_URL, as the tests make) answers it, so the pages it serves are in it too.
import { writeFileSync } from 'node:fs';
import { startTestGateway } from '../test/support/gateway.ts';

const out = process.argv[2];
if (!out) throw new Error('usage: node --import tsx .ci/openapi-document.mts <file.json>');
const gw = await startTestGateway();
try {
  const res = await fetch(`${gw.url}/api/openapi.json`);
  if (res.status !== 200) throw new Error(`GET /api/openapi.json answered ${res.status}`);
  writeFileSync(out, JSON.stringify(await res.json(), null, 2));
} finally {
  await gw.stop();
}
process.exit(0);
