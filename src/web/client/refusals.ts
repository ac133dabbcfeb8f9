import { networkSentence, type Problem } from './api.ts';
import type { KeysPageConfig } from '../page-config.ts';

// A refused action, said as what happened and what to do next. The API's codes are stable; its
// detail text is the fallback for anything this page does not know yet.

const count = (n: number | null, one: string, many: string) => (n === null ? many : `${n} ${n === 1 ? one : many}`);

/** When the daily create limit lifts, in UTC and in the reader's own time. */
function nextUtcMidnight(now = new Date()): string {
  const next = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
  const local = new Intl.DateTimeFormat(undefined, { weekday: 'long', hour: 'numeric', minute: '2-digit' }).format(next);
  return `after midnight UTC (${local} your time)`;
}

export function createRefusal(p: Problem, keys: KeysPageConfig): string {
  switch (p.code) {
    case 'API_KEY_LIMIT':
      return `You already have ${count(keys.maxKeysPerUser, 'key', 'keys')}, the most one person may hold. `
        + 'Revoke a key you no longer use, then create the new one.';
    case 'API_KEY_DAILY_LIMIT':
      return `You have created ${count(keys.maxCreatesPerDay, 'key', 'keys')} today, the most allowed in one day (revoked keys count too). `
        + `You can create another ${nextUtcMidnight()}.`;
    case 'SERVICE_UNAVAILABLE':
      return 'Keys cannot be created right now because part of the service is not answering. Nothing was created. '
        + 'Try again in a few minutes, and tell the people who run this server if it keeps happening.';
    case 'FEATURE_DISABLED':
      return `${p.detail} It was turned off after this page was opened: reload the page and create the key again.`;
    case 'API_KEYS_DISABLED':
      return 'API keys were turned off on this server after this page was opened. Reload the page to see what changed.';
    case 'VALIDATION_FAILED':
      // A scope removed by a policy change while the page was open.
      if (p.errors.some((e) => e.path.startsWith('permissions.'))) {
        return 'An access option on this page is no longer offered by the server. Reload the page and create the key again.';
      }
      return p.detail || 'The key could not be created. Try again in a moment.';
    case 'NETWORK':
      return networkSentence;
    default:
      return p.detail || 'The key could not be created. Try again in a moment.';
  }
}

export function revokeRefusal(p: Problem): string {
  switch (p.code) {
    case 'NOT_FOUND':
      return 'That key was already revoked or no longer exists. The list has been refreshed.';
    case 'NETWORK':
      return networkSentence;
    default:
      return p.detail || 'The key could not be revoked. Try again in a moment.';
  }
}

export const nameSentence = 'Give the key a name of 1 to 64 characters.';
