import { stopEmbedded } from './db.ts';
import { removeTempDirs } from './tmp.ts';

// Mocha root hooks: the embedded PostgreSQL (when DATABASE_URL is unset) lives for the whole run.
export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    this.timeout(30_000);
    await stopEmbedded();
    removeTempDirs();
  },
};
