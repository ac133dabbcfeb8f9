import { keysOn, type Config } from '../config.ts';

// The request quota stamped on a key at creation. Pure: the caller looks the
// plans up and hands them in.

export interface QuotaSource {
  ownerPlan: string | null;
  /** The creator's active organization's plan; used only under Variant B with organization billing. */
  activeOrganizationPlan: string | null;
  hasActiveOrganization: boolean;
}

export function stampedQuota(config: Pick<Config, 'apiKeys' | 'billingScope' | 'plans' | 'defaultPlan' | 'defaultApiRateLimit'>, src: QuotaSource): number {
  const orgScoped = keysOn(config)?.variant === 'B' && config.billingScope === 'organization' && src.hasActiveOrganization;
  const planName = (orgScoped ? src.activeOrganizationPlan : src.ownerPlan) ?? config.defaultPlan;
  return config.plans[planName]?.apiRateLimit ?? config.defaultApiRateLimit;
}
