import { pino, type Logger, type DestinationStream } from 'pino';

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
        paths: ['key', 'plaintext', 'password', 'token', '*.key', '*.plaintext', '*.password', '*.token', 'headers', '*.headers', 'req.headers'],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
