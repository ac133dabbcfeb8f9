import Router from '@koa/router';
import { z } from 'zod';
import type { WebhookService } from '../../services/events/webhooks.ts';
import { EVENT_TYPES } from '../../services/events/types.ts';
import { parseBody, parseQuery } from '../body.ts';
import { queryInt } from '../query-int.ts';
import type { GatewayContext, GatewayState } from '../state.ts';
import { serve, type Operation } from '../operation.ts';
import * as s from '../openapi-schemas.ts';
import { requestMeta } from './auth.ts';
import { requireAdmin, theAdmin } from '../admin-only.ts';

const eventList = z.array(z.enum(EVENT_TYPES)).min(1).max(EVENT_TYPES.length).nullable()
  .describe('The types sent to this endpoint, each stored once in its first place; absent or null: every type');
const url = z.string().min(1).max(2048)
  .describe('https and a public address (http and loopback only when the server allows private addresses)');

export const webhookCreateBody = z.object({ url, events: eventList.optional(), description: z.string().max(500).optional() }).strict();
export const webhookPatchBody = z.object({
  url: url.optional(), events: eventList.optional(), description: z.string().max(500).optional(), enabled: z.boolean().optional(),
}).strict();
const deliveriesQuery = z.object({ limit: queryInt(1, 100, 50) }).strict();

const problems = ['NOT_FOUND', 'VALIDATION_FAILED'] as const;
export const webhookOperations = {
  list: {
    method: 'get', path: '/admin/webhooks', tag: 'admin', summary: 'Webhook endpoints', ok: { status: 200, schema: s.webhookList },
    security: 'admin',
  },
  create: {
    method: 'post', path: '/admin/webhooks', tag: 'admin',
    summary: 'Register a webhook endpoint; its signing secret is in this answer only', body: webhookCreateBody,
    ok: { status: 201, schema: s.createdWebhook }, problems: ['VALIDATION_FAILED'], security: 'admin',
  },
  get: {
    method: 'get', path: '/admin/webhooks/:id', tag: 'admin', summary: 'One webhook endpoint', ok: { status: 200, schema: s.webhook },
    problems: ['NOT_FOUND'], security: 'admin',
  },
  update: {
    method: 'patch', path: '/admin/webhooks/:id', tag: 'admin', summary: 'Change an endpoint: url, events, description, enabled',
    body: webhookPatchBody, ok: { status: 200, schema: s.webhook }, problems: [...problems], security: 'admin',
  },
  remove: {
    method: 'delete', path: '/admin/webhooks/:id', tag: 'admin', summary: 'Delete an endpoint and its delivery log',
    ok: { status: 204, schema: null }, problems: ['NOT_FOUND'], security: 'admin',
  },
  rotate: {
    method: 'post', path: '/admin/webhooks/:id/rotate-secret', tag: 'admin',
    summary: 'A new signing secret; the old one signs beside it for 24 h, and until then the secret cannot be rotated again',
    ok: { status: 200, schema: s.rotatedWebhookSecret }, problems: ['NOT_FOUND', 'SECRET_ROTATION_PENDING'], security: 'admin',
  },
  test: {
    method: 'post', path: '/admin/webhooks/:id/test', tag: 'admin', summary: 'Send a webhook.test event to this endpoint',
    ok: { status: 202, schema: s.webhookTest }, problems: ['NOT_FOUND'], security: 'admin',
  },
  deliveries: {
    method: 'get', path: '/admin/webhooks/:id/deliveries', tag: 'admin',
    summary: "An endpoint's deliveries, newest first, with every attempt", query: deliveriesQuery,
    ok: { status: 200, schema: s.webhookDeliveries }, problems: ['NOT_FOUND'], security: 'admin',
  },
  redeliver: {
    method: 'post', path: '/admin/webhooks/:id/deliveries/:eventId/redeliver', tag: 'admin',
    summary: 'Send a delivery again, its retry schedule started over', ok: { status: 202, schema: null }, problems: ['NOT_FOUND'],
    security: 'admin',
  },
} satisfies Record<string, Operation>;

/** `/admin/webhooks`: admin sessions only, by the one rule of every admin router (the policy says so too). */
export function webhookRoutes({ webhooks }: { webhooks: WebhookService }): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  router.use(requireAdmin);
  const ops = webhookOperations;
  const admin = (ctx: GatewayContext) => ({ userId: theAdmin(ctx).id });
  const id = (ctx: { params: Record<string, string> }) => ctx.params.id!;

  serve(router, ops.list, async (ctx) => {
    ctx.body = { webhooks: await webhooks.list() };
  });
  serve(router, ops.create, async (ctx) => {
    const actor = admin(ctx);
    const body = await parseBody(ctx, webhookCreateBody);
    ctx.status = 201;
    ctx.body = await webhooks.create(actor, body, requestMeta(ctx));
  });
  serve(router, ops.get, async (ctx) => {
    ctx.body = await webhooks.get(id(ctx));
  });
  serve(router, ops.update, async (ctx) => {
    const actor = admin(ctx);
    const body = await parseBody(ctx, webhookPatchBody);
    ctx.body = await webhooks.update(actor, id(ctx), body, requestMeta(ctx));
  });
  serve(router, ops.remove, async (ctx) => {
    await webhooks.remove(admin(ctx), id(ctx), requestMeta(ctx));
    ctx.status = 204;
  });
  serve(router, ops.rotate, async (ctx) => {
    ctx.body = await webhooks.rotateSecret(admin(ctx), id(ctx), requestMeta(ctx));
  });
  serve(router, ops.test, async (ctx) => {
    ctx.status = 202;
    ctx.body = await webhooks.test(admin(ctx), id(ctx));
  });
  serve(router, ops.deliveries, async (ctx) => {
    const q = parseQuery(ctx, deliveriesQuery);
    ctx.body = await webhooks.deliveries(id(ctx), q.limit);
  });
  serve(router, ops.redeliver, async (ctx) => {
    await webhooks.redeliver(id(ctx), ctx.params.eventId!);
    ctx.status = 202;
  });
  return router;
}
