import { expect } from 'chai';
import type { Reply } from './http.ts';

const show = (res: Reply) => `${res.status} ${res.text.slice(0, 300)}`;

/**
 * The MCP endpoint's refusal: 401 in OAuth form, never a problem body, and a
 * WWW-Authenticate naming the protected-resource metadata under `base` (the gateway's public address).
 */
export function expectOAuth401(res: Reply, base: string | RegExp): void {
  expect(res.status, show(res)).to.equal(401);
  const header = res.headers['www-authenticate'];
  const prefix = typeof base === 'string' ? base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : base.source;
  expect(header, show(res)).to.match(new RegExp(`^Bearer error="invalid_token", scope="mcp", resource_metadata="${prefix}/\\.well-known/oauth-protected-resource"$`));
  expect(res.headers['content-type'], show(res)).to.match(/^application\/json/);
  expect(res.body, show(res)).to.have.keys('error', 'error_description');
  expect(res.body.error, show(res)).to.equal('invalid_token');
  expect(res.body.error_description, show(res)).to.be.a('string').that.is.not.empty;
}

/** Any gateway listening on 127.0.0.1 without a public address. */
export const LOCAL_BASE = /http:\/\/127\.0\.0\.1:\d+/;
