import Router from '@koa/router';
import { serve, type Operation } from '../operation.ts';
import * as s from '../openapi-schemas.ts';
import type { GatewayState } from '../state.ts';

export const openApiOperations = {
  document: { method: 'get', path: '/openapi.json', tag: 'meta', summary: 'This document', ok: { status: 200, schema: s.openApiDocument }, security: 'public' },
} satisfies Record<string, Operation>;

/**
 * `GET /openapi.json`: public; built once, since it depends only on the configuration. The document
 * is handed in (app.ts builds it with http/openapi.ts), which reads this file's operation too.
 */
export function openApiRoutes(document: Record<string, unknown>): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  const text = JSON.stringify(document);
  serve(router, openApiOperations.document, (ctx) => {
    ctx.type = 'application/json';
    ctx.body = text;
  });
  return router;
}
