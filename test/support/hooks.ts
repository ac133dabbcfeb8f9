import { stopEmbedded } from './db.ts';
import { removeTempDirs } from './tmp.ts';
import { checkRecorded, recorded } from './openapi.ts';

// Mocha root hooks: the embedded PostgreSQL (when DATABASE_URL is unset) lives for the whole run.
export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    this.timeout(30_000);
    await stopEmbedded();
    removeTempDirs();
    // Every answer the tests saw must match GET /api/openapi.json.
    const mismatches = checkRecorded();
    if (mismatches.length) {
      throw new Error(`${mismatches.length} answers do not match the OpenAPI document (of ${recorded.length} recorded):\n${mismatches.slice(0, 30).join('\n')}`);
    }
  },
};
