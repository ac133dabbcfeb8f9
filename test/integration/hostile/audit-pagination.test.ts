import { expect } from 'chai';
import { useGateway, type TestGateway } from '../../support/gateway.ts';
import { signUp } from '../../support/http.ts';

// Keyset pages must follow the number, not its text: ordered as text, "9" sorts above "18", and a
// cursor of "9" then skips every id from 10 upwards: entries an auditor would never see.

interface Page { status: number; body: { entries: { id: string }[]; nextCursor: string | null } }

describe('the admin audit log with more than 20 entries', () => {
  let gw: TestGateway;
  useGateway({}, (g) => (gw = g));

  it('pages of 3 list every entry exactly once, newest first, across the 9 -> 10 and 99 -> 100 boundaries', async () => {
    const admin = await signUp(gw.url, { name: 'Auditor' });
    await gw.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [admin.user.id]);
    // Two owners, so no daily create limit stops the run short; each create and revoke is an entry.
    for (const owner of [await signUp(gw.url), await signUp(gw.url)]) {
      for (let i = 0; i < 7; i++) {
        const key = await owner.client.post('/api/api-keys', { name: `k${i}` });
        expect(key.status).to.equal(201);
        expect((await owner.client.delete(`/api/api-keys/${key.body.id}`)).status).to.equal(204);
      }
    }
    // Ids past 99 as well: the text order breaks again at every new digit.
    await gw.pool.query("SELECT setval('audit_log_id_seq', 95)");
    const owner = await signUp(gw.url);
    for (let i = 0; i < 8; i++) expect((await owner.client.post('/api/api-keys', { name: `late${i}` })).status).to.equal(201);

    const { rows } = await gw.pool.query<{ id: string }>('SELECT id FROM audit_log ORDER BY id DESC');
    expect(rows.length).to.be.greaterThan(20);
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 50; pages++) {
      const page: Page = await admin.client.get(`/api/admin/audit-log?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).to.equal(200);
      seen.push(...page.body.entries.map((e) => e.id));
      cursor = page.body.nextCursor;
      if (!cursor) break;
    }
    expect(seen).to.deep.equal(rows.map((r) => String(r.id)));
  });
});
