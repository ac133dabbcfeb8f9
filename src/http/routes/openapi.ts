import Router from '@koa/router';
import { serve, type Operation } from '../operation.ts';
import * as s from '../openapi-schemas.ts';
import type { GatewayState } from '../state.ts';

export const openApiOperations = {
  document: {
    method: 'get', path: '/openapi.json', tag: 'meta', summary: 'This document',
    ok: { status: 200, schema: s.openApiDocument }, security: 'public',
  },
} satisfies Record<string, Operation>;

/**
 * `GET /openapi.json`: public; built on the first request for it and kept, since it depends only on
 * the configuration. Not at start: turning every schema into JSON Schema is about a quarter of
 * what a gateway allocates while it starts, and most gateways are never asked. The builder is
 * handed in (app.ts passes http/openapi.ts's, which reads this file's operation too). Its
 * `servers` names publicUrl; without one, the origin of each request is named.
 */
export function openApiRoutes(build: () => Record<string, unknown>): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  let built: { text: string; servers: boolean } | null = null;
  serve(router, openApiOperations.document, (ctx) => {
    built ??= ((doc) => ({ text: JSON.stringify(doc), servers: 'servers' in doc }))(build());
    ctx.type = 'application/json';
    if (built.servers) {
      ctx.body = built.text;
      return;
    }
    // Without publicUrl the server is the origin this document was asked at. Built from the Host
    // header, it must not be kept by a shared cache for another asker.
    ctx.set('Cache-Control', 'no-store');
    ctx.body = `{"servers":[{"url":${JSON.stringify(`${ctx.protocol}://${ctx.host}`)}}],${built.text.slice(1)}`;
  });
  return router;
}
