import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../app.ts';
import type { Config } from '../config.ts';
import { oauthErrorRenderer, oauthRoutes } from '../http/routes/oauth.ts';
import { acceptedMcpHosts, isLoopbackHost } from '../mcp/dns-rebinding.ts';
import { mcpRoutes } from '../mcp/routes.ts';
import { ACCESS_TOKEN_SECONDS, createOAuthRuntime, oauthIssuer } from '../oauth/provider.ts';
import { connectionBudget } from '../services/database.ts';
import { createExhaustionEvents } from '../services/events/exhaustion.ts';
import { createSecretScanning } from '../services/events/secret-scanning.ts';
import { createUnknownTokenScreen } from '../services/keys/unknown-tokens.ts';
import { SHUTDOWN_GRACE_MS } from '../shutdown.ts';
import { logTaskFailure, outageWatchOf } from '../store/outage.ts';
import { isAssetRequest } from '../web/assets.ts';
import { oauthPages } from '../web/consent.ts';
import { consolePages } from '../web/console/routes.ts';
import { webhookPages } from '../web/console/webhooks.ts';
import { pageErrors } from '../web/error-page.ts';
import { pageConfig, webRoutes } from '../web/routes.ts';
import type { Gateway, GatewayOptions } from './options.ts';
import type { Services } from './services.ts';
import type { Stores } from './stores.ts';

/** A request's headers must be whole within 10 s. */
export const HEADERS_TIMEOUT_MS = 10_000;

/** The last step of startGateway: the app over the services, the background work, the listening server, and how it stops. */
export async function serve(config: Config, opts: GatewayOptions, stores: Stores, s: Services): Promise<Gateway> {
  const { logger, clock, engine } = stores;
  const { pool, embedded } = stores.database;
  const { policy, keys, accounts, audit, usage, upstream, oauth, grants, slots, tracker, webhooks } = s;
  const consentPages = oauthPages(pageConfig(config));
  const pages = [
    mcpRoutes({ config, keys, policy, upstream, oauth, slots, sessionIds: s.mcpSessionIds }),
    oauthRoutes({ oauth, grants, pages: consentPages }),
    webRoutes({ config, policy, accounts, leakedKeys: keys.listLeakedKeys }),
    consolePages({ config, policy, console: s.consoleService, accounts, audit, keys, usage }),
    webhookPages({ config, webhooks }),
  ];
  const { github } = config.secretScanning;
  const secretScanning = github.enabled && config.apiKeys.enabled
    ? createSecretScanning({
      pool, keysUrl: github.keysUrl, prefix: config.apiKeys.prefix, revokeLeaked: keys.revokeLeaked, nowMs: () => clock().getTime(),
    })
    : null;
  const { app, routes } = createApp({
    config, accounts, audit, console: s.consoleService, keys, rotation: s.rotation, usage, verifier: s.verifier,
    counters: engine.counters, quota: s.quota, policy, upstream, logger, clock, registry: s.registry, bodyIdleMs: opts.bodyIdleMs, slots,
    extraRouters: pages,
    callerless: (ctx) => isAssetRequest(ctx.method, ctx.path),
    pageErrors: pageErrors(config, (err, reqId) => logger.error({ reqId, err }, 'unexpected error')),
    webhooks,
    secretScanning,
    onExhausted: createExhaustionEvents({ pool, onError: (err) => logger.warn({ err }, 'a quota.exhausted event could not be written') }),
    readiness: () => ({ policyVersion: s.policyService.loaded.version }),
    oauth: config.surface.features.oauth
      ? { holder: oauth, grants, unknownTokens: createUnknownTokenScreen({ pool, clock, lifetimeMs: ACCESS_TOKEN_SECONDS * 1000 }) }
      : undefined,
    probes: [
      // A load balancer must stop sending here from the moment a stop begins, stores up or not.
      { name: 'accepting', check: async () => { if (tracker.stopping) throw new Error('stopping'); } },
      { name: 'postgres', check: async () => void (await pool.query('SELECT 1')) },
      ...(engine.probe ? [engine.probe] : []),
    ],
  });

  // Headers whole within 10 s (Node's own default is a minute, checked every 30 s, so a
  // slow-headers client held its socket about 66 s); past server.maxConnections Node closes a new
  // connection at once, so a flood of idle sockets cannot take every file descriptor.
  await s.workers.start();
  const headersTimeout = opts.headersTimeoutMs ?? HEADERS_TIMEOUT_MS;
  const serverOptions = { headersTimeout, connectionsCheckingInterval: Math.min(1_000, headersTimeout) };
  const server = createServer(serverOptions, tracker.listener(app.callback()));
  server.maxConnections = config.server.maxConnections;
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((ok, fail) => server.once('error', fail).listen(config.port, config.host, () => ok()));
  const { port } = server.address() as AddressInfo;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  if (config.surface.features.oauth) {
    const decided = oauthIssuer(config.publicUrl, config.host, url);
    if ('issuer' in decided) {
      oauth.serve(decided.issuer, () => createOAuthRuntime({
        pool, grants, issuer: decided.issuer, mcpPath: config.surface.paths.mcp, renderError: oauthErrorRenderer(consentPages),
        clientMetadata: config.oauth.clientMetadata, clientMetadataCa: opts.clientMetadataCa,
      }));
    } else {
      logger.warn(decided.reason);
    }
  }
  logger.info({
    url, database: embedded ? 'embedded' : config.databaseDirectUrl ? 'DATABASE_URL (pooled) + DATABASE_DIRECT_URL' : 'DATABASE_URL',
    counters: engine.describe, oauthIssuer: oauth.issuer,
    // What this instance may open in all, for the operator to multiply by the fleet's size.
    postgresConnections: connectionBudget(config, engine.postgresConnections),
  }, 'keygate listening');
  // Reachable from the network with no public URL: say which names /api/mcp answers to, since a
  // client that uses any other (the machine's name, another address) is refused.
  if (config.surface.features.mcp && !config.publicUrl && !isLoopbackHost(config.host)) {
    logger.warn({ acceptedHosts: acceptedMcpHosts(config) },
      `${config.surface.paths.mcp} answers only for these hosts (any port); set publicUrl or mcpServer.allowedHosts for others`);
  }

  let stopped: Promise<{ cutOff: number }> | null = null;
  const shutdown = (graceMs = SHUTDOWN_GRACE_MS) => (stopped ??= (async () => {
    const drained = await tracker.drain(server, graceMs);
    if (drained.cutOff) logger.warn({ requests: drained.cutOff, graceMs }, 'stopping: requests still in flight were cut off');
    await s.workers.stop(logger);
    // After the last request, so nothing they buffered is left behind; before the pools close.
    await s.closeHooks.run(logger);
    // Off the fleet's list: a stop on purpose is not an instance gone silent.
    await s.heartbeat.leave().catch((err: unknown) =>
      logTaskFailure(logger, err, 'could not leave the fleet list; the instance shows as silent there until its retention ends'));
    await s.listener.close();
    await s.verifier.close();
    await upstream?.close();
    outageWatchOf(pool)?.close();
    await engine.close();
    await pool.end();
    await embedded?.stop();
    logger.info('keygate stopped');
    return drained;
  })());

  return {
    server, url, pool, routes, closeHooks: s.closeHooks, shutdown, quota: s.quota, events: s.sender,
    policy: { service: s.policyService, heartbeat: s.heartbeat, observer: s.observer },
    close: async () => void (await shutdown(0)),
  };
}
