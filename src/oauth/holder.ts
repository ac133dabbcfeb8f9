import type { OAuthRuntime } from './provider.ts';

/**
 * The gateway's OAuth authorization server for MCP clients, once the gateway knows its issuer. The library
 * (oidc-provider) weighs about 30 MB resident and makes an RSA key pair when built, so it is built
 * by the first request that needs it (a step under /oauth/, a token presented on the MCP endpoint),
 * not at start: a gateway that no MCP client ever connects to does not carry it (its memory after
 * start stays that of a gateway without OAuth). Everything that only names the issuer (the
 * metadata documents, the MCP 401) is answered without it.
 */
export interface OAuthHolder {
  /** Null until the gateway knows its issuer, and for good when it cannot have one (src/gateway/serve.ts). */
  readonly issuer: string | null;
  /** The library, built once; null when there is no issuer. A build that failed is tried again. */
  runtime(): Promise<OAuthRuntime | null>;
}

export interface ServedOAuth extends OAuthHolder {
  /** Names the issuer; `build` makes the library when it is first needed. */
  serve(issuer: string, build: () => Promise<OAuthRuntime>): void;
}

export function createOAuthHolder(): ServedOAuth {
  let issuer: string | null = null;
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
    serve(name, make) {
      issuer = name;
      build = make;
    },
  };
}
