import { keysOn, RATE_WINDOWS, type Config, type RateLimitRule } from '../config.ts';

// The request quota stamped on a key at creation. Pure: the caller looks the
// plans up and hands them in.

export interface QuotaSource {
  ownerPlan: string | null;
  /** The creator's active organization's plan; used only under Variant B with organization billing. */
  activeOrganizationPlan: string | null;
  hasActiveOrganization: boolean;
}

type PlanConfig = Pick<Config, 'apiKeys' | 'billingScope' | 'plans' | 'defaultPlan' | 'defaultApiRateLimit' | 'defaultRateLimits'>;

/** What a new key or grant is stamped with: its day, and its short windows (shortest first). */
export interface StampedLimits { requestQuota: number; rateLimits: RateLimitRule[] }

function planOf(config: PlanConfig, src: QuotaSource) {
  const orgScoped = keysOn(config)?.variant === 'B' && config.billingScope === 'organization' && src.hasActiveOrganization;
  return config.plans[(orgScoped ? src.activeOrganizationPlan : src.ownerPlan) ?? config.defaultPlan];
}

export function stampedQuota(config: PlanConfig, src: QuotaSource): number {
  return planOf(config, src)?.apiRateLimit ?? config.defaultApiRateLimit;
}

export function stampedLimits(config: PlanConfig, src: QuotaSource): StampedLimits {
  const plan = planOf(config, src);
  const rules = plan?.rateLimits ?? config.defaultRateLimits;
  return {
    requestQuota: plan?.apiRateLimit ?? config.defaultApiRateLimit,
    rateLimits: rules.map((r) => ({ window: r.window, limit: r.limit })).sort((a, b) => RATE_WINDOWS[a.window] - RATE_WINDOWS[b.window]),
  };
}
