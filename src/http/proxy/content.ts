import type { Next } from 'koa';
import { AppError } from '../../errors.ts';
import { safeEqual } from '../../services/secrets.ts';
import type { GatewayContext } from '../state.ts';
import { forwardHeaders, relay, type Upstream } from './upstream.ts';

export const CONTENT_PATH = '/v1/content';

/**
 * `/v1/content` is guarded by one shared secret, not by users or keys: an x-api-key
 * never opens it, and the upstream sees no identity.
 */
export function contentRoute(upstream: Upstream | null, contentApiKey: string | null) {
  return async function contentRouteMiddleware(ctx: GatewayContext, next: Next) {
    if (ctx.path !== CONTENT_PATH && !ctx.path.startsWith(CONTENT_PATH + '/')) return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw new AppError('METHOD_NOT_ALLOWED', 'The content route only answers GET.');
    const presented = ctx.get('x-content-api-key');
    if (!contentApiKey || !presented || !safeEqual(presented, contentApiKey)) {
      throw new AppError('UNAUTHENTICATED', 'The content route needs the shared key in the X-Content-Api-Key header.');
    }
    if (!upstream) throw new AppError('NOT_FOUND', 'No such route.');
    const headers = forwardHeaders(ctx.req.headers, { kind: 'anonymous' }, () => []);
    relay(ctx, await upstream.send({ method: ctx.method, path: ctx.path + ctx.search, headers }));
  };
}
