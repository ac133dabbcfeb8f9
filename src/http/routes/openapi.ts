import Router from '@koa/router';
import { serve, type Operation } from '../operation.ts';
import * as s from '../openapi-schemas.ts';
import type { GatewayState } from '../state.ts';

export const openApiOperations = {
  document: { method: 'get', path: '/openapi.json', tag: 'meta', summary: 'This document', ok: { status: 200, schema: s.openApiDocument }, security: 'public' },
} satisfies Record<string, Operation>;

/**
 * `GET /openapi.json`: public; built on the first request for it and kept, since it depends only on
 * the configuration. Not at start: turning every schema into JSON Schema is about a quarter of
 * what a gateway allocates while it starts, and most gateways are never asked. The builder is
 * handed in (app.ts passes http/openapi.ts's, which reads this file's operation too).
 */
export function openApiRoutes(build: () => Record<string, unknown>): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  let text: string | null = null;
  serve(router, openApiOperations.document, (ctx) => {
    ctx.type = 'application/json';
    ctx.body = text ??= JSON.stringify(build());
  });
  return router;
}
