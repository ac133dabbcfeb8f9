import type { Config } from '../config.ts';
import type { Pool } from '../store/db.ts';
import { applyPolicyFiles } from '../http/policy/store.ts';

/** `keygate policy apply`: the configured model and policy file become the stored policy. */
export async function runPolicyApply(pool: Pool, config: Config, io: { stdout(s: string): void }): Promise<number> {
  const { rules } = await applyPolicyFiles(pool, config.policy.model, config.policy.file);
  io.stdout(`applied ${rules} policy lines from ${config.policy.file}; running gateways reload within a second`);
  return 0;
}
