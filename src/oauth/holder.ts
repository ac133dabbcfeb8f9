import type { Pool } from '../store/db.ts';
import { isIssuedToken } from '../store/oauth.ts';
import type { OAuthRuntime } from './provider.ts';

/**
 * The gateway's authorization server (CONTRACT 15), once the gateway knows its issuer. The library
 * (oidc-provider) weighs about 30 MB resident and makes an RSA key pair when built, so it is built
 * by the first request that needs it (a step under /oauth/, a token presented on the MCP endpoint),
 * not at start: a gateway that no MCP client ever connects to does not carry it (issue 18's memory
 * after start). Everything that only names the issuer (the metadata documents, the MCP 401) is
 * answered without it.
 */
export interface OAuthHolder {
  /** Null until the gateway knows its issuer, and for good when it cannot have one (main.ts). */
  readonly issuer: string | null;
  /** The library, built once; null when there is no issuer. A build that failed is tried again. */
  runtime(): Promise<OAuthRuntime | null>;
  /** Whether `value` is an access or refresh token this server issued (expired ones included). */
  issued(value: string): Promise<boolean>;
}

export interface ServedOAuth extends OAuthHolder {
  /** Names the issuer; `build` makes the library when it is first needed. */
  serve(issuer: string, pool: Pool, build: () => Promise<OAuthRuntime>): void;
}

export function createOAuthHolder(): ServedOAuth {
  let issuer: string | null = null;
  let pool: Pool | null = null;
  let build: (() => Promise<OAuthRuntime>) | null = null;
  let building: Promise<OAuthRuntime> | null = null;
  return {
    get issuer() {
      return issuer;
    },
    async runtime() {
      if (!build) return null;
      const make = build;
      building ??= make().catch((e: unknown) => {
        building = null;
        throw e;
      });
      return building;
    },
    async issued(value) {
      return pool !== null && isIssuedToken(pool, value);
    },
    serve(name, db, make) {
      issuer = name;
      pool = db;
      build = make;
    },
  };
}
