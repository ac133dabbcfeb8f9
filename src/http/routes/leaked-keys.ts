import Router from '@koa/router';
import { z } from 'zod';
import type { KeyService } from '../../services/keys/service.ts';
import type { GatewayState } from '../state.ts';
import { KEY_ROUTE, serve, type Operation } from '../operation.ts';
import { requireSessionCaller } from './callers.ts';

const leakedKeys = z.object({
  keys: z.array(z.object({ id: z.uuid(), name: z.string(), start: z.string(), leakedAt: z.iso.datetime(), leakedUrl: z.string() })),
});

export const leakedKeyOperations = {
  list: {
    method: 'get', path: '/api-keys/leaked', tag: 'keys', security: 'session', problems: KEY_ROUTE,
    summary: 'Own keys revoked in the last 30 days because they were found public, with where', ok: { status: 200, schema: leakedKeys },
  },
} satisfies Record<string, Operation>;

export function leakedKeyRoutes({ keys }: { keys: KeyService }): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  serve(router, leakedKeyOperations.list, async (ctx) => {
    ctx.body = { keys: await keys.listLeakedKeys(requireSessionCaller(ctx).user.id) };
  });
  return router;
}
