import { OAUTH_ROUTES } from '../oauth/provider.ts';
import type { Operation } from './operation.ts';
import * as s from './openapi-schemas.ts';

// The OAuth authorization server's routes as the OpenAPI document describes them. keygate serves
// the metadata, registration's bounds, the authorization request's scope and the consent step
// itself (http/routes/oauth.ts); the token, revocation, key set, registration read and resumed authorization are the
// library's, reached through the same router's catch-all under /oauth/. Answers the library writes
// keep their RFCs' JSON shapes (RFC 6749, 7009, 7591); the gateway's own refusals are problems.

const page = { description: 'An HTML page', contentType: 'text/html' };
const redirect = (to: string) => ({ description: `A redirect (Location) ${to}` });
const oauthError = (description: string) => ({ description, schema: s.oauthError, withProblems: true });

export const oauthOperations = {
  metadata: {
    method: 'get', path: '/.well-known/oauth-authorization-server', tag: 'oauth', security: 'public',
    summary: 'RFC 8414 metadata of the authorization server (404 when this gateway has no issuer URL)',
    ok: { status: 200, schema: s.authorizationServerMetadata }, problems: ['NOT_FOUND'],
  },
  register: {
    method: 'post', path: OAUTH_ROUTES.registration, tag: 'oauth', security: 'public', operationId: 'registerOAuthClient',
    summary: 'RFC 7591 dynamic registration of a public client (native: loopback redirect URIs; web: https)',
    body: s.clientMetadata, bodyRequired: true, ok: { status: 201, schema: s.clientInformation },
    problems: ['NOT_FOUND', 'TOO_MANY_REGISTRATIONS'],
    answers: { 400: oauthError('The metadata is refused: invalid_client_metadata or invalid_redirect_uri') },
  },
  readRegistration: {
    method: 'get', path: `${OAUTH_ROUTES.registration}/:clientId`, tag: 'oauth', security: 'public', operationId: 'readOAuthClient',
    summary: 'RFC 7592 read of a registration: Authorization: Bearer with the registration access token it was given',
    ok: { status: 200, schema: s.clientInformation },
    answers: { 401: oauthError('invalid_token: no registration access token, or not this client\'s') },
  },
  authorize: {
    method: 'get', path: OAUTH_ROUTES.authorization, tag: 'oauth', security: 'public', operationId: 'authorizeOAuthClient',
    summary: 'The authorization request (code flow with PKCE S256), opened in the person\'s browser',
    query: s.authorizationQuery, ok: { status: 303, schema: null }, problems: ['NOT_FOUND'],
    answers: {
      302: redirect('to the client\'s redirect URI with code or error'), 303: redirect('to sign-in, the consent step, or the client'),
      400: { ...page, description: 'A page saying why the request is refused; the client is not answered', withProblems: true },
    },
  },
  resume: {
    method: 'get', path: `${OAUTH_ROUTES.authorization}/:uid`, tag: 'oauth', security: 'public', operationId: 'resumeOAuthAuthorization',
    summary: 'Where the consent step sends the browser back to: answered by redirect to the client',
    ok: { status: 303, schema: null }, problems: ['NOT_FOUND'],
    answers: {
      302: redirect('to the client\'s redirect URI'), 303: redirect('to the client\'s redirect URI'),
      400: { ...page, withProblems: true },
    },
  },
  consent: {
    method: 'get', path: '/oauth/consent/:uid', tag: 'oauth', security: 'session', operationId: 'showOAuthConsent',
    summary: 'The consent page naming the client, with Allow and Deny (anonymous: sent to sign in and back)',
    ok: { status: 200, schema: null, contentType: 'text/html' }, problems: ['NOT_FOUND'],
    answers: { 302: redirect('to sign-in, and back here after') },
  },
  allow: {
    method: 'post', path: '/oauth/consent/:uid/allow', tag: 'oauth', security: 'session', operationId: 'allowOAuthClient',
    summary: 'The person allows: a grant is recorded and the browser goes on to the client with a code',
    ok: { status: 303, schema: null }, problems: ['NOT_FOUND', 'GRANT_LIMIT'],
    answers: { 400: { ...page, description: 'Past a grant limit: a page saying why; the client gets nothing', withProblems: true } },
  },
  deny: {
    method: 'post', path: '/oauth/consent/:uid/deny', tag: 'oauth', security: 'session', operationId: 'denyOAuthClient',
    summary: 'The person declines: the client is answered access_denied', ok: { status: 303, schema: null }, problems: ['NOT_FOUND'],
  },
  token: {
    method: 'post', path: OAUTH_ROUTES.token, tag: 'oauth', security: 'public', operationId: 'oauthToken',
    summary: 'RFC 6749 token endpoint: a code (with its PKCE verifier) or a refresh token for tokens',
    body: s.tokenRequest, bodyRequired: true, bodyContentType: 'application/x-www-form-urlencoded',
    ok: { status: 200, schema: s.tokenResponse },
    answers: { 400: oauthError('invalid_grant, invalid_request, invalid_target…'), 401: oauthError('invalid_client') },
  },
  revoke: {
    method: 'post', path: OAUTH_ROUTES.revocation, tag: 'oauth', security: 'public', operationId: 'oauthRevoke',
    summary: 'RFC 7009 revocation of a token (a revoked refresh token ends its grant)',
    body: s.revocationRequest, bodyRequired: true, bodyContentType: 'application/x-www-form-urlencoded', ok: { status: 200, schema: null },
    answers: { 400: oauthError('invalid_request'), 401: oauthError('invalid_client') },
  },
  jwks: {
    method: 'get', path: OAUTH_ROUTES.jwks, tag: 'oauth', security: 'public', operationId: 'oauthJwks',
    summary: 'The authorization server\'s public signing keys (JWK Set)', ok: { status: 200, schema: s.jwks },
  },
} satisfies Record<string, Operation>;
