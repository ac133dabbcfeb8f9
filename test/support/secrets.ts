import { expect } from 'chai';
import pg from 'pg';
import type { TestGateway } from './gateway.ts';

/**
 * Sweeps every table of the gateway's database and every log line it wrote for the given secrets
 * (and their tails, which is what a truncated copy would keep): none may appear anywhere.
 */
export async function expectNoSecrets(gw: TestGateway, secrets: readonly string[]): Promise<void> {
  const needles = secrets.flatMap((s) => [s, s.slice(Math.floor(s.length / 3))]);
  const dump = new pg.Client({ connectionString: gw.database.url });
  await dump.connect();
  try {
    const { rows: tables } = await dump.query<{ name: string }>("SELECT quote_ident(tablename) AS name FROM pg_tables WHERE schemaname = 'public'");
    expect(tables.length, 'tables swept').to.be.greaterThan(0);
    for (const { name } of tables) {
      const { rows } = await dump.query<{ row: string }>(`SELECT t::text AS row FROM ${name} t`);
      const text = rows.map((r) => r.row).join('\n');
      for (const n of needles) expect(text.includes(n), `a secret is stored in table ${name}`).to.equal(false);
    }
  } finally {
    await dump.end();
  }
  expect(gw.logs.length, 'log lines swept').to.be.greaterThan(0);
  const logs = gw.logs.join('');
  for (const n of needles) expect(logs.includes(n), 'a secret is in the logs').to.equal(false);
}
