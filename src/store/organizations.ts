import type { Queryable } from './db.ts';

export interface OrganizationRow { id: string; name: string; slug: string; plan: string | null; created_at: Date }
export interface MemberRow { organization_id: string; user_id: string; role: 'owner' | 'admin' | 'member'; created_at: Date }

export async function insertOrganization(db: Queryable, o: { name: string; slug: string }): Promise<OrganizationRow | null> {
  const { rows } = await db.query<OrganizationRow>(
    'INSERT INTO organizations (name, slug) VALUES ($1, $2) ON CONFLICT (slug) DO NOTHING RETURNING id, name, slug, plan, created_at',
    [o.name, o.slug],
  );
  return rows[0] ?? null;
}

export async function insertMember(
  db: Queryable, m: { organizationId: string; userId: string; role: MemberRow['role'] },
): Promise<MemberRow> {
  const { rows } = await db.query<MemberRow>(
    'INSERT INTO members (organization_id, user_id, role) VALUES ($1, $2, $3) RETURNING organization_id, user_id, role, created_at',
    [m.organizationId, m.userId, m.role],
  );
  return rows[0]!;
}

export async function listUserOrganizations(db: Queryable, userId: string): Promise<(OrganizationRow & { role: MemberRow['role'] })[]> {
  const { rows } = await db.query<OrganizationRow & { role: MemberRow['role'] }>(
    `SELECT o.id, o.name, o.slug, o.plan, o.created_at, m.role
       FROM organizations o JOIN members m ON m.organization_id = o.id
      WHERE m.user_id = $1 ORDER BY o.created_at, o.id`,
    [userId],
  );
  return rows;
}

export async function findMember(db: Queryable, organizationId: string, userId: string): Promise<MemberRow | null> {
  const { rows } = await db.query<MemberRow>(
    'SELECT organization_id, user_id, role, created_at FROM members WHERE organization_id = $1 AND user_id = $2',
    [organizationId, userId],
  );
  return rows[0] ?? null;
}

export async function findOrganizationById(db: Queryable, id: string): Promise<OrganizationRow | null> {
  const { rows } = await db.query<OrganizationRow>('SELECT id, name, slug, plan, created_at FROM organizations WHERE id = $1', [id]);
  return rows[0] ?? null;
}

export async function setOrganizationPlan(db: Queryable, slug: string, plan: string | null): Promise<OrganizationRow | null> {
  const { rows } = await db.query<OrganizationRow>(
    'UPDATE organizations SET plan = $2 WHERE slug = $1 RETURNING id, name, slug, plan, created_at', [slug, plan]);
  return rows[0] ?? null;
}
