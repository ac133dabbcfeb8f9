// `keygate policy apply [FILE] [--dry-run | --shadow] [--force] [--by WHO] [--message TEXT]`.
import { parseArgs } from 'node:util';
import { policySha256, type PolicyTexts } from '../../policy/bundle.ts';
import { engineOfTexts } from '../../services/policy/index.ts';
import { safetyChecks } from './checks.ts';
import { CliError, display, type LoadedPolicy } from './common.ts';
import { printDiff } from './diff.ts';
import { readTexts, sayOutcome, type Lifecycle } from './lifecycle.ts';
import { reportFleet, settledFleet, waitSeconds } from './history.ts';

/** The policy the store holds now, as an engine `policy diff` can compare. */
async function livePolicy(lc: Lifecycle): Promise<{ loaded: LoadedPolicy; version: number; sha256: string | null }> {
  const { texts } = await readTexts(lc);
  const live = await lc.versions.liveEngine(texts);
  // Seeded from the files at first start: no version, the lines are all there is.
  const policyPath = live.version > 0 ? `live version ${live.version}` : 'the live stored policy';
  const modelPath = live.version > 0 ? 'the stored model' : lc.config.policy.model;
  return {
    loaded: { engine: live.engine, policyPath, modelPath, scopesPath: 'the stored scopes' },
    version: live.version,
    sha256: live.sha256,
  };
}

async function dryRun(lc: Lifecycle, texts: PolicyTexts, policyPath: string, checksOk: boolean): Promise<number> {
  const live = await livePolicy(lc);
  if (live.sha256 === policySha256(texts)) lc.io.stdout(`already live as version ${live.version}\n`);
  const candidate = await engineOfTexts(texts, display(lc.io, policyPath)).catch((e: Error) => {
    throw new CliError(`${display(lc.io, policyPath)}: ${e.message}`);
  });
  lc.io.stdout(`changes from ${live.loaded.policyPath} to ${display(lc.io, policyPath)}:\n`);
  const loaded = { engine: candidate, policyPath, modelPath: lc.config.policy.model, scopesPath: lc.config.policy.scopes };
  await printDiff(lc.io, live.loaded, loaded);
  lc.io.stdout(`dry run: nothing written${checksOk ? '' : '; the checks failed, so apply would refuse'}\n`);
  return checksOk ? 0 : 1;
}

export async function applyCommand(args: string[], lc: Lifecycle): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      'dry-run': { type: 'boolean', default: false },
      shadow: { type: 'boolean', default: false },
      force: { type: 'boolean', default: false },
      by: { type: 'string' },
      message: { type: 'string', default: '' },
      wait: { type: 'string' },
    },
  });
  const waitS = waitSeconds(values.wait);
  if (waitS !== null && (values['dry-run'] || values.shadow)) {
    throw new CliError('--wait waits for the fleet to load a new live version; --dry-run and --shadow make none');
  }
  if (positionals.length > 1) {
    throw new CliError('usage: keygate policy apply [POLICY_FILE] [--dry-run | --shadow] [--force] [--by WHO] [--message TEXT]');
  }
  if (values['dry-run'] && values.shadow) throw new CliError('--dry-run and --shadow do not go together: a dry run writes nothing');
  if (values['dry-run'] && values.force) throw new CliError('--dry-run runs the checks; --force would skip them');
  const { texts, policyPath } = await readTexts(lc, positionals[0]);
  const who = { by: values.by ?? lc.user, message: values.message };

  let checksOk = true;
  if (values.force) lc.io.stdout('--force: lint and the suites were skipped\n');
  else checksOk = await safetyChecks(lc.io, texts, policyPath);
  if (values['dry-run']) return dryRun(lc, texts, policyPath, checksOk);
  if (!checksOk) {
    const shown = display(lc.io, policyPath);
    lc.io.stderr(`refused: ${shown} fails lint or its suites (above); nothing was written. --force applies it anyway.\n`);
    return 1;
  }
  if (values.shadow) {
    const { id, rules } = await lc.shadow.store(texts, who, display(lc.io, policyPath));
    lc.io.stdout(`stored ${display(lc.io, policyPath)} (${rules} lines) as candidate ${id}; every gateway decides each request under it`
      + ' too within a second, while the live policy still decides. See `keygate policy shadow report`.\n');
    return 0;
  }
  sayOutcome(lc.io, await lc.versions.apply(texts, who, display(lc.io, policyPath)), `applied ${display(lc.io, policyPath)}`);
  // --wait: the apply stands either way; the exit code says whether the fleet caught up in time.
  if (waitS !== null) return reportFleet(lc, await settledFleet(lc, waitS), false, waitS);
  return 0;
}
