import { pino, type Logger, type DestinationStream } from 'pino';
import type { Swallowed } from './errors.ts';

/**
 * One JSON line per event. Secret-bearing fields are censored wherever they appear in a logged
 * object, as a second line of defence: no code logs headers, bodies or keys in the first place.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'keygate' },
      redact: {
        paths: [
          'key', 'plaintext', 'password', 'token', '*.key', '*.plaintext', '*.password', '*.token',
          'headers', '*.headers', 'req.headers',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}

/**
 * Hears the errors callers let go (best-effort cleanups): each is counted by kind, and the first of
 * each kind is logged, so a cleanup that always fails is seen without a line per request.
 */
export function swallowedReporter(logger: Logger, count: (what: string) => void): Swallowed {
  const logged = new Set<string>();
  return (what, err) => {
    count(what);
    if (logged.has(what)) return;
    logged.add(what);
    logger.warn({ err, what }, `a ${what} failed and was let go; later ones are only counted (keygate_swallowed_errors_total)`);
  };
}
