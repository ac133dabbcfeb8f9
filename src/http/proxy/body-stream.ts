import type { IncomingMessage } from 'node:http';
import { Transform } from 'node:stream';
import type { AppError } from '../../errors.ts';
import { duration, MAX_BODY_BYTES, requestTimeout, tooLarge } from '../body.ts';

export interface BoundedBody {
  /** What the upstream reads. */
  stream: Transform;
  /** Every byte the client declared has arrived. */
  complete(): boolean;
  /** The client is ahead of the upstream: a stall now is the upstream's, not the client's. */
  waitingOnUpstream(): boolean;
  /** Stops passing the body on, for whatever reason the exchange ended. */
  stop(): void;
}

export interface BoundedBodyOptions {
  idleMs: number;
  /** Called once when the body breaks a bound: 413 when it grows past 1 MiB, 408 when it goes quiet. */
  onBreach(err: AppError): void;
  /** Called once, when the whole body has arrived. */
  onComplete(): void;
}

/**
 * Passes a request body on to the upstream while it stays within 1 MiB and keeps arriving. A body
 * that goes quiet would otherwise hold its upstream connection for as long as the client likes:
 * 130 abandoned uploads were enough to take every connection of the pool.
 */
export function boundedBody(source: IncomingMessage, opts: BoundedBodyOptions): BoundedBody {
  let size = 0;
  let done = false;
  let idle: NodeJS.Timeout | undefined;
  const stream = new Transform({
    transform(chunk: Buffer, _enc, next) {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        breach(tooLarge());
        return;
      }
      arm();
      next(null, chunk);
    },
    flush(next) {
      done = true;
      clearTimeout(idle);
      opts.onComplete();
      next();
    },
  });
  let breached = false;
  const breach = (err: AppError) => {
    if (breached) return;
    breached = true;
    opts.onBreach(err);
    stop();
  };
  const arm = () => {
    clearTimeout(idle);
    idle = setTimeout(() => {
      // Backpressure pauses the client's socket; that quiet is the upstream's doing.
      if (stream.writableNeedDrain) return arm();
      breach(requestTimeout(`The request body sent nothing for ${duration(opts.idleMs)}.`));
    }, opts.idleMs);
  };
  const stop = () => {
    clearTimeout(idle);
    source.unpipe(stream);
    if (!stream.destroyed) stream.destroy();
  };
  stream.on('error', () => {});
  stream.on('close', () => clearTimeout(idle));
  source.pipe(stream);
  arm();
  return { stream, complete: () => done, waitingOnUpstream: () => stream.writableNeedDrain, stop };
}
