import type { Logger } from 'pino';
import type { ChangeFollower } from '../services/changes.ts';
import type { KeyVerifier } from '../services/keys/verifier.ts';
import type { PolicyService } from '../services/policy/index.ts';
import { type ChannelCheck, listen, type Listener, type Reconnected, type Signal } from '../store/notify.ts';

export interface SignalDeps {
  directUrl: string;
  changes: ChangeFollower;
  policyService: PolicyService;
  verifier: Pick<KeyVerifier, 'forget' | 'forgetAll'>;
  logger: Logger;
  signalCheck?: ChannelCheck;
}

/**
 * Follows the change signals: a policy change reloads the policy, any other drops the key it names
 * from the cache. LISTEN needs a session of its own: through a transaction pooler it would never
 * hear a thing, so it goes to the direct URL.
 */
export function followSignals({ directUrl, changes, policyService, verifier, logger, signalCheck }: SignalDeps): Promise<Listener> {
  const onSignal = (s: Signal, change: number | null) => {
    changes.heard(change);
    if (s.type === 'policy') void policyService.reload();
    else verifier.forget(s);
    logger.debug({ signal: s.type }, 'signal heard');
  };
  // Signals sent while the listener was away are lost: a reconnect reads what it missed from the
  // change record, and starts over from the database only when the record cannot say.
  const onReconnect = async ({ unheardMs, read }: Reconnected) => {
    const caught = await changes.catchUp(unheardMs, read);
    if (caught.status === 'caught-up') {
      logger.warn({ changes: caught.changes, afterChange: caught.afterChange, unheardMs },
        `signal channel reconnected: caught up on ${caught.changes} recorded changes`);
      // The version is compared even when no policy change was recorded meanwhile; a cheap read.
      void (caught.policy ? policyService.reload() : policyService.check());
      return;
    }
    logger.warn({ reason: caught.reason, unheardMs },
      `signal channel reconnected, but what was missed cannot be read (${caught.reason}): dropped cached keys and re-reading the policy`);
    verifier.forgetAll();
    void policyService.reload();
  };
  return listen(directUrl, onSignal, (r) => void onReconnect(r), signalCheck);
}
