import Router from '@koa/router';
import type { Config } from '../../config.ts';
import { buildOpenApi } from '../openapi.ts';
import type { GatewayState } from '../state.ts';

/** `GET /openapi.json`: public; built once, since it depends only on the configuration. */
export function openApiRoutes(config: Config): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  const document = JSON.stringify(buildOpenApi(config));
  router.get('/openapi.json', (ctx) => {
    ctx.type = 'application/json';
    ctx.body = document;
  });
  return router;
}
