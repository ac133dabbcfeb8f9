import type { LimitedCounter } from './engine.ts';

// Every Redis key the counter engine writes is spelled here. A lease and an increment of one key's
// window touch one key, and so one hash slot in a Cluster: both paths see one number.

/** A counter's window: its name and the window's start in epoch seconds. */
export const windowKey = (prefix: string, name: string, windowStart: Date): string =>
  `${prefix}${name}:${windowStart.getTime() / 1000}`;

/**
 * Redis keys of a group of counters: the first as a lone counter spells it; each other one
 * hash-tagged with the first's whole name. Redis Cluster hashes a key with no braces whole, and
 * one with braces by what they hold, so every key lands in the first's slot while the first keeps
 * the spelling the one-by-one increment and the leased blocks use (no count is lost by renaming).
 */
export const groupKeys = (prefix: string, all: LimitedCounter[]): string[] => {
  const head = windowKey(prefix, all[0]!.name, all[0]!.windowStart);
  return all.map((c, i) => (i === 0 ? head : `{${head}}:${c.name}:${c.windowStart.getTime() / 1000}`));
};

/**
 * A window's leased block records: a hash of id -> "unclaimed:expiresAtMs", hash-tagged with the
 * counter's whole name (which has no braces, so a Cluster hashes it whole): both in one slot.
 */
export const recordsKey = (counterKey: string): string => `{${counterKey}}:leases`;

/** The prefix every key of a gateway's counters begins with. */
export const KEY_PREFIX = 'keygate:';
