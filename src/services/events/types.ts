// What keygate tells other systems. Data carries ids, names, prefixes, the actor and what changed;
// never a key, a hash, a token or a secret, since a receiver's logs are outside keygate's care.

export const EVENT_TYPES = [
  'key.created', 'key.updated', 'key.rotated', 'key.revoked', 'key.expiring', 'key.leaked',
  'quota.exhausted', 'grant.created', 'grant.revoked', 'user.banned', 'user.unbanned',
  'policy.applied', 'policy.rolled_back', 'webhook.test',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Who made the change: a user, the operator's command line, or keygate itself (a sweep, a report). */
export type EventActor = { kind: 'user'; userId: string } | { kind: 'cli' } | { kind: 'system' };

export type EventValue = string | number | boolean | null | string[] | EventActor;
export type EventData = Record<string, EventValue>;

export interface EventInput {
  type: EventType;
  data: EventData;
  /** Set for an event said once whoever notices it: a second insert with the same key is dropped. */
  once?: string;
}

export const actorOf = (actor: { userId: string } | 'cli' | 'system'): EventActor =>
  actor === 'cli' ? { kind: 'cli' } : actor === 'system' ? { kind: 'system' } : { kind: 'user', userId: actor.userId };
