import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { packageRoot } from '../../../src/config.ts';
import { tempDir } from '../../support/tmp.ts';

// An operator's policy set: the shipped files plus the scopes reports (read, write) and exports,
// and the lines that use them. Shared by the API and page tests of declared scopes.

export const shipped = (f: string) => resolve(packageRoot, 'policies', f);

const REPORTS_SCOPES = `
  reports:
    label: Reports
    description: The reporting API.
    actions: [read, write]
  exports:
    label: Exports
    description: Bulk data exports.
`;
const REPORTS_LINES = [
  'p, key, !perm:reports, .*, /api/reports/**, deny, key.reports-needs-reports',
  'p, key, !perm:reports:write, ^(?!(GET|HEAD|OPTIONS)$).+$, /api/reports/**, deny, key.reports-writes',
  'p, key, !perm:exports, .*, /api/exports/**, deny, key.exports-needs-exports',
].join('\n');

/** A copy of the shipped policy set with the operator's scopes and lines added. */
export function operatorPolicySet(): { dir: string; model: string; file: string; scopes: string } {
  const dir = tempDir('kg-scopes-');
  const model = join(dir, 'model.conf');
  const file = join(dir, 'variant-a.csv');
  const scopes = join(dir, 'scopes.yaml');
  copyFileSync(shipped('model.conf'), model);
  writeFileSync(file, `${readFileSync(shipped('variant-a.csv'), 'utf8')}\n${REPORTS_LINES}\n`);
  writeFileSync(scopes, `${readFileSync(shipped('scopes.yaml'), 'utf8')}${REPORTS_SCOPES}`);
  return { dir, model, file, scopes };
}

