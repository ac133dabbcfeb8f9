import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import Router from '@koa/router';
import type { Configuration } from 'oidc-provider';
import { AppError } from '../../errors.ts';
import type { GrantService } from '../../services/oauth-grants.ts';
import type { GatewayContext, GatewayState } from '../state.ts';
import { requestMeta } from './auth.ts';
import { readBodyText } from '../body.ts';
import { serve } from '../operation.ts';
import { oauthOperations } from '../oauth-operations.ts';
import { cspOrigin, MAX_REGISTRATION_BYTES, metadataProblem } from '../../oauth/registration.ts';
import { OAUTH_ROUTES, type OAuthRuntime } from '../../oauth/provider.ts';
import type { OAuthHolder } from '../../oauth/holder.ts';

/** What the consent page shows (web/consent.ts draws it). */
export interface ConsentFacts {
  uid: string;
  clientName: string;
  clientId: string;
  /** Where the client will receive the answer. */
  redirectOrigin: string;
  email: string;
  /** For a client known by its metadata document: the host that published it. */
  documentHost?: string;
}

export interface Page { headers: Record<string, string>; body: string }

/**
 * The pages these routes answer with, handed in by the composition root (web/consent.ts makes
 * them): http/ draws no page itself.
 */
export interface OAuthPages {
  /** The headers of every page (what a sign-in redirect answers with too). */
  headers: Record<string, string>;
  consent(facts: ConsentFacts): Promise<Page>;
  /** A standalone page: why an app could not be connected, and nothing was. */
  refusal(title: string, words: string, detail: string | null): Page;
}

export interface OAuthRoutesDeps { oauth: OAuthHolder; grants: GrantService; pages: OAuthPages }

const sendPage = (ctx: GatewayContext | Parameters<NonNullable<Configuration['renderError']>>[0], page: Page) => {
  ctx.set(page.headers);
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = page.body;
};

const notServed = () => new AppError('NOT_FOUND', 'This server does not offer OAuth: it has no public URL to name as issuer.');

// Refused as problems that also carry RFC 7591's `error`, so an OAuth client library reads the
// reason as well.
const refused = (detail: string) =>
  new AppError('VALIDATION_FAILED', detail, { error: 'invalid_client_metadata', error_description: detail });

function tooLarge(): AppError {
  const detail = `The client metadata is larger than ${MAX_REGISTRATION_BYTES} bytes, the most this server stores for a client.`;
  // What is left unread would be taken for the next request: the connection closes.
  return new AppError(
    'VALIDATION_FAILED', detail, { error: 'invalid_client_metadata', error_description: detail }, { closeConnection: true },
  );
}

/** Reads the registration body (at most 8 KB) and checks it (oauth/registration.ts); answers the text. */
async function readRegistration(ctx: GatewayContext): Promise<string> {
  const text = await readBodyText(ctx, MAX_REGISTRATION_BYTES, tooLarge);
  const problem = metadataProblem(text);
  if (problem) throw refused(problem);
  return text;
}

/**
 * The library's error page (provider.ts takes it as renderError), drawn in the person's browser:
 * an authorization request that failed its checks is answered here, never by a redirect.
 */
export const oauthErrorRenderer = (pages: OAuthPages): NonNullable<Configuration['renderError']> => (ctx, out) => {
  const detail = out.error_description ? `${out.error}: ${out.error_description}` : out.error;
  sendPage(ctx, pages.refusal(
    'This app could not be connected',
    'The request the app sent to connect to keygate was not valid, so keygate stopped here.',
    detail,
  ));
};

/** `req` as if unread, its body `text`: what the library reads after keygate has bounded it. */
function replayed(req: IncomingMessage, text: string): IncomingMessage {
  const headers = { ...req.headers, 'content-length': String(Buffer.byteLength(text)) };
  delete headers['transfer-encoding'];
  const stream = Readable.from([Buffer.from(text)], { objectMode: false });
  const request = {
    headers, method: req.method, url: req.url, httpVersion: req.httpVersion, socket: req.socket, connection: req.socket,
  };
  return Object.assign(stream, request) as unknown as IncomingMessage;
}

/** RFC 8414 metadata (the fields docs/ and the README list), the consent step, and the library under /oauth/. */
export function oauthRoutes({ oauth, grants, pages }: OAuthRoutesDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ sensitive: true, strict: true });
  const live = async (): Promise<OAuthRuntime> => {
    const runtime = await oauth.runtime();
    if (!runtime) throw notServed();
    return runtime;
  };

  serve(router, oauthOperations.metadata, (ctx) => {
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
      // RFC 9207: the authorization response names its issuer, so a client talking to several
      // servers can tell whose code it got.
      authorization_response_iss_parameter_supported: true,
      // A client may use the https URL of its own metadata document as its client_id.
      client_id_metadata_document_supported: true,
    };
  });

  /** The interaction the library is waiting on; a stale or foreign one reads as not found. */
  const interaction = async (ctx: GatewayContext) => {
    const { provider } = await live();
    try {
      return await provider.interactionDetails(ctx.req, ctx.res);
    } catch {
      throw new AppError('NOT_FOUND', 'This authorization request has expired or was started in another browser. '
        + 'Start connecting from your MCP client again.');
    }
  };

  serve(router, oauthOperations.consent, async (ctx) => {
    const { provider } = await live();
    const caller = ctx.state.caller;
    ctx.set(pages.headers);
    if (caller.kind !== 'session') return ctx.redirect(`/sign-in?next=${encodeURIComponent(ctx.path)}`);
    const details = await interaction(ctx);
    const clientId = String(details.params.client_id);
    const client = await provider.Client.find(clientId);
    if (!client) throw new AppError('NOT_FOUND', 'The client that asked is no longer registered.');
    // A registration made before hosts were checked could still name one that is not plain: such
    // an origin never goes into the header, and the consent is not offered.
    const redirectOrigin = cspOrigin(String(details.params.redirect_uri));
    if (!redirectOrigin) {
      throw new AppError('VALIDATION_FAILED', 'The app registered a redirect address this server does not accept. '
        + 'Ask its authors to register again.');
    }
    // A client known by its metadata document names itself; the host it was fetched from is what vouches for it.
    const documentHost = (client as { clientIdMetadataDocument?: boolean }).clientIdMetadataDocument ? new URL(clientId).host : undefined;
    sendPage(ctx, await pages.consent({
      uid: details.uid, clientName: client.clientName ?? clientId, clientId, redirectOrigin, email: caller.user.email,
      ...(documentHost ? { documentHost } : {}),
    }));
  });

  serve(router, oauthOperations.allow, async (ctx) => {
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
      const recorded = await grants.recordGrant(
        { userId: accountId, clientId, clientName: client.clientName ?? clientId, save: () => grant.save() },
        requestMeta(ctx),
      );
      grantId = recorded.id;
    } catch (e) {
      // Past a limit the person reads why on a page; the client gets nothing (no code, no redirect).
      if (!(e instanceof AppError) || e.code !== 'GRANT_LIMIT') throw e;
      if (e.data.retryAfterSeconds !== undefined) ctx.set('Retry-After', String(e.data.retryAfterSeconds));
      ctx.status = 400;
      sendPage(ctx, pages.refusal('This app could not be connected', e.detail, 'GRANT_LIMIT'));
      return;
    }
    const result = { login: { accountId }, consent: { grantId } };
    const to = await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: false });
    ctx.set('Cache-Control', 'no-store');
    ctx.status = 303;
    ctx.redirect(to);
  });

  serve(router, oauthOperations.deny, async (ctx) => {
    const { provider } = await live();
    if (ctx.state.caller.kind !== 'session') throw new AppError('UNAUTHENTICATED', 'Sign in to answer this request.');
    await interaction(ctx);
    const declined = { error: 'access_denied', error_description: 'The person declined to connect this client.' };
    const to = await provider.interactionResult(ctx.req, ctx.res, declined, { mergeWithLastSubmission: false });
    ctx.set('Cache-Control', 'no-store');
    ctx.status = 303;
    ctx.redirect(to);
  });

  // Everything else under /oauth/ is the library's: it writes its own answers (the token,
  // revocation, key set and resumed authorization that oauth-operations.ts describes among them).
  const library = async (ctx: GatewayContext, req: IncomingMessage = ctx.req) => {
    const { handler } = await live();
    ctx.respond = false;
    await handler(req, ctx.res);
  };

  // Anonymous registration is bounded before the library sees it: so many a minute
  // per client address, and a small body. The library reads the body keygate already read.
  serve(router, oauthOperations.register, async (ctx) => {
    await live();
    await grants.registrationAllowed(ctx.ip || 'unknown');
    await library(ctx, replayed(ctx.req, await readRegistration(ctx)));
  });
  // Every authorization request asks for the one scope there is, whatever it named: the consent
  // page and the grant Allow records are always `mcp`, and the token response says so (RFC 6749
  // 3.3 lets the server grant other than asked). Passed through, a scope left out, `openid` or a
  // spelling like `MCP` made the library want more than the grant held: Allow then recorded a grant
  // (counted toward the person's limits) and the client got another consent page or access_denied,
  // never a code. Only GET: the library serves no POST authorization request (enableHttpPostMethods
  // is off), so no form body needs the same.
  serve(router, oauthOperations.authorize, async (ctx) => {
    const params = new URLSearchParams(ctx.querystring);
    // The library keeps the request's parameters in PostgreSQL (jsonb), which holds no U+0000: a
    // NUL in `state` or any other parameter failed there, as a 500.
    if ([...params].some(([name, value]) => name.includes('\u0000') || value.includes('\u0000'))) {
      throw new AppError('VALIDATION_FAILED', 'The authorization request holds a NUL character (%00) in a parameter.');
    }
    if (params.getAll('scope').join(' ') !== 'mcp') {
      params.delete('scope');
      params.set('scope', 'mcp');
      ctx.req.url = `${OAUTH_ROUTES.authorization}?${params.toString()}`;
    }
    await library(ctx);
  });
  router.all('/oauth/{*rest}', (ctx) => library(ctx));
  return router;
}
