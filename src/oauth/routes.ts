import Router from '@koa/router';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import type { GrantService } from '../services/oauth-grants.ts';
import type { GatewayContext, GatewayState } from '../http/state.ts';
import { requestMeta } from '../http/routes/auth.ts';
import { sharedAssets } from '../web/assets.ts';
import { layout, pageHeaders } from '../web/layout.ts';
import { accountHeader } from '../web/pages.ts';
import { pageConfig } from '../web/routes.ts';
import { consentMain } from '../web/consent.ts';
import { OAUTH_ERROR_HEADERS, oauthErrorPage } from '../web/oauth-error.ts';
import { readRegistration } from './registration.ts';
import { cspOrigin, OAUTH_ROUTES, type OAuthRuntime } from './provider.ts';
import type { OAuthHolder } from './holder.ts';

export interface OAuthRoutesDeps { config: Config; oauth: OAuthHolder; grants: GrantService }

const notServed = () => new AppError('NOT_FOUND', 'This server does not offer OAuth: it has no public URL to name as issuer.');


/** RFC 8414 metadata (exactly CONTRACT 15's fields), the consent step, and the library under /oauth/. */
export function oauthRoutes({ config, oauth, grants }: OAuthRoutesDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  const pageCfg = pageConfig(config);
  const live = async (): Promise<OAuthRuntime> => {
    const runtime = await oauth.runtime();
    if (!runtime) throw notServed();
    return runtime;
  };

  router.get('/.well-known/oauth-authorization-server', (ctx) => {
    const { issuer } = oauth;
    if (!issuer) throw notServed();
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.body = {
      issuer,
      authorization_endpoint: `${issuer}${OAUTH_ROUTES.authorization}`,
      token_endpoint: `${issuer}${OAUTH_ROUTES.token}`,
      registration_endpoint: `${issuer}${OAUTH_ROUTES.registration}`,
      revocation_endpoint: `${issuer}${OAUTH_ROUTES.revocation}`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      scopes_supported: ['mcp'],
      token_endpoint_auth_methods_supported: ['none'],
    };
  });

  /** The interaction the library is waiting on; a stale or foreign one reads as not found. */
  const interaction = async (ctx: GatewayContext) => {
    const { provider } = await live();
    try {
      return await provider.interactionDetails(ctx.req, ctx.res);
    } catch {
      throw new AppError('NOT_FOUND', 'This authorization request has expired or was started in another browser. Start connecting from your MCP client again.');
    }
  };

  router.get('/oauth/consent/:uid', async (ctx) => {
    const { provider } = await live();
    const caller = ctx.state.caller;
    ctx.set(pageHeaders);
    if (caller.kind !== 'session') return ctx.redirect(`/sign-in?next=${encodeURIComponent(ctx.path)}`);
    const details = await interaction(ctx);
    const clientId = String(details.params.client_id);
    const client = await provider.Client.find(clientId);
    if (!client) throw new AppError('NOT_FOUND', 'The client that asked is no longer registered.');
    // A registration made before hosts were checked could still name one that is not plain: such
    // an origin never goes into the header, and the consent is not offered.
    const redirectOrigin = cspOrigin(String(details.params.redirect_uri));
    if (!redirectOrigin) throw new AppError('VALIDATION_FAILED', 'The app registered a redirect address this server does not accept. Ask its authors to register again.');
    const bundle = await sharedAssets();
    // The answer leaves by a redirect to the client after a form post; browsers hold that redirect
    // to form-action, so the client's origin (and only it) joins 'self' on this page.
    ctx.set('Content-Security-Policy', pageHeaders['Content-Security-Policy']!.replace("form-action 'self'", `form-action 'self' ${redirectOrigin}`));
    // Under no-referrer a form post says `Origin: null`, which the cross-site check refuses;
    // same-origin still sends nothing to the client the answer is redirected to.
    ctx.set('Referrer-Policy', 'same-origin');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = layout({
      title: 'Connect an app', script: null, assets: bundle, config: pageCfg,
      header: accountHeader(caller.user.email),
      main: consentMain({ uid: details.uid, clientName: client.clientName ?? clientId, clientId, redirectOrigin, email: caller.user.email }),
    });
  });

  router.post('/oauth/consent/:uid/allow', async (ctx) => {
    const { provider, resource } = await live();
    const caller = ctx.state.caller;
    if (caller.kind !== 'session') throw new AppError('UNAUTHENTICATED', 'Sign in to answer this request.');
    const details = await interaction(ctx);
    const clientId = String(details.params.client_id);
    const client = await provider.Client.find(clientId);
    if (!client) throw new AppError('NOT_FOUND', 'The client that asked is no longer registered.');
    const accountId = caller.user.id;
    const grant = new provider.Grant({ accountId, clientId });
    // `mcp` is both the scope asked for and the scope of the one resource; the grant holds both.
    grant.addOIDCScope('mcp');
    grant.addResourceScope(resource, 'mcp');
    let grantId: string;
    try {
      grantId = (await grants.recordGrant({ userId: accountId, clientId, clientName: client.clientName ?? clientId, save: () => grant.save() }, requestMeta(ctx))).id;
    } catch (e) {
      // Past a limit the person reads why on a page; the client gets nothing (no code, no redirect).
      if (!(e instanceof AppError) || e.code !== 'GRANT_LIMIT') throw e;
      ctx.set(OAUTH_ERROR_HEADERS);
      if (e.data.retryAfterSeconds !== undefined) ctx.set('Retry-After', String(e.data.retryAfterSeconds));
      ctx.status = 400;
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = oauthErrorPage('This app could not be connected', e.detail, 'GRANT_LIMIT');
      return;
    }
    const to = await provider.interactionResult(ctx.req, ctx.res, { login: { accountId }, consent: { grantId } }, { mergeWithLastSubmission: false });
    ctx.set('Cache-Control', 'no-store');
    ctx.status = 303;
    ctx.redirect(to);
  });

  router.post('/oauth/consent/:uid/deny', async (ctx) => {
    const { provider } = await live();
    if (ctx.state.caller.kind !== 'session') throw new AppError('UNAUTHENTICATED', 'Sign in to answer this request.');
    await interaction(ctx);
    const to = await provider.interactionResult(ctx.req, ctx.res, { error: 'access_denied', error_description: 'The person declined to connect this client.' }, { mergeWithLastSubmission: false });
    ctx.set('Cache-Control', 'no-store');
    ctx.status = 303;
    ctx.redirect(to);
  });

  // Everything else under /oauth/ is the library's: it writes its own answers.
  const library = async (ctx: GatewayContext) => {
    const { handler } = await live();
    ctx.respond = false;
    await handler(ctx.req, ctx.res);
  };

  // Anonymous registration is bounded before the library sees it (CONTRACT 22): so many a minute
  // per client address, and a small body. The library reads the body keygate already read.
  router.post(OAUTH_ROUTES.registration, async (ctx) => {
    await live();
    await grants.registrationAllowed(ctx.ip || 'unknown');
    (ctx.req as { body?: string }).body = await readRegistration(ctx);
    await library(ctx);
  });
  router.all('/oauth/{*rest}', library);
  return router;
}
