import { z } from 'zod';
import { AUDIT_TYPES } from '../services/audit.ts';

// The shapes of the operator console's API answers (/api/admin/…), for the OpenAPI document.

const instant = z.iso.datetime();
const id = z.uuid();

export const auditEntry = z.object({
  id: z.string(), type: z.enum(AUDIT_TYPES),
  actorUserId: id.nullable(), ownerUserId: id.nullable(), keyId: id.nullable(), grantId: z.string().nullable(),
  previousKeyId: id.nullable(),
  at: instant, ip: z.string().nullable(), userAgent: z.string().nullable(),
  actor: z.literal('cli').nullable().describe('`cli` when the command line acted; null when actorUserId did.'),
  actorEmail: z.string().nullable(), ownerEmail: z.string().nullable(),
  changes: z.array(z.string()).nullable().describe('On API_KEY_UPDATED: which of name, enabled, expiresAt changed.'),
  detail: z.record(z.string(), z.unknown()).nullable(),
});
export const auditLog = z.object({ entries: z.array(auditEntry), nextCursor: z.string().nullable() });

const version = z.object({ version: z.int().min(0), sha256: z.string(), appliedAt: instant, appliedBy: z.string(), message: z.string() });
const candidate = z.object({ id: z.int(), sha256: z.string(), createdAt: instant, createdBy: z.string(), message: z.string() });
export const policyState = z.object({ live: version.nullable(), liveVersion: z.int().min(0), candidate: candidate.nullable() });
export const versionList = z.object({ live: z.int().min(0), versions: z.array(version) });
export const versionTexts = version.extend({ texts: z.object({ model: z.string(), policy: z.string(), scopes: z.string() }) });
export const versionChanges = z.object({
  version: z.int().min(0), against: z.int().min(0).nullable(), changed: z.int().min(0),
  decisions: z.array(z.object({ request: z.string(), subjects: z.array(z.string()), before: z.string(), after: z.string() })),
});
export const applyOutcome = z.object({
  status: z.enum(['applied', 'already-live']), version: z.int().min(0), rules: z.int().optional(), scopes: z.int().optional(),
});
export const shadowReport = z.object({
  candidate: candidate.nullable(),
  divergences: z.array(z.object({
    liveRule: z.string(), shadowRule: z.string(), outcome: z.enum(['would-allow', 'would-deny']), count: z.int(),
    example: z.record(z.string(), z.string()),
  })),
});
const rule = z.object({ id: z.string(), line: z.int(), text: z.string() });
export const explanation = z.object({
  subject: z.object({
    kind: z.enum(['anonymous', 'session', 'key']), permissions: z.array(z.string()), role: z.enum(['user', 'admin']).nullable(),
  }),
  method: z.string(), path: z.string(), policyVersion: z.int().min(0),
  decision: z.enum(['allow', 'deny']), decidedBy: rule.nullable(), requiredPermission: z.string().nullable(), alsoMatched: z.array(rule),
});
export const fleet = z.object({
  liveVersion: z.int().min(0), candidateId: z.int().nullable(), lagging: z.int().min(0),
  instances: z.array(z.object({
    instanceId: z.string(), host: z.string(), pid: z.int(), policyVersion: z.int(), candidateId: z.int().nullable(), seenAt: instant,
    lagging: z.boolean(), lagReason: z.string().nullable(), silent: z.boolean(),
  })),
});
export const usageTotals = z.object({
  days: z.array(z.object({ date: z.iso.date(), requests: z.int().min(0), refused: z.int().min(0) })),
});
export const counts = z.object({ users: z.int().min(0), activeKeys: z.int().min(0), liveGrants: z.int().min(0) });
export const overview = policyState.extend({ fleet, counts, usage: usageTotals });
export const adminUser = z.object({
  id, email: z.string(), name: z.string(), role: z.enum(['user', 'admin']), plan: z.string().nullable(), banned: z.boolean(),
  keysHeld: z.int().min(0), createdAt: instant,
});
export const userPage = z.object({ users: z.array(adminUser), nextCursor: z.string().nullable() });
export const userRecord = z.object({ user: adminUser.omit({ keysHeld: true, createdAt: true }) });
