import type { Surface } from '../config.ts';
import type { Operation } from './operation.ts';
import * as s from './openapi-schemas.ts';

// The MCP endpoint's operations as the OpenAPI document describes them. Here, below both the
// document (http/openapi.ts) and the server that serves them (mcp/routes.ts), so the document
// never reaches up into the MCP server.

/** RFC 9728's root form; the path form appends the endpoint's path. */
export const METADATA_PATH = '/.well-known/oauth-protected-resource';

const refusal = { description: 'Every refusal, in the OAuth form (WWW-Authenticate: Bearer error="invalid_token")', schema: s.mcpRefusal };

/** The MCP endpoint and its metadata, at their full paths (this router is not mounted under the prefix). */
export function mcpOperations(surface: Pick<Surface, 'paths'>) {
  return {
    metadata: {
      method: 'get', path: METADATA_PATH, tag: 'mcp',
      summary: 'RFC 9728 metadata of the MCP endpoint', ok: { status: 200, schema: s.resourceMetadata }, problems: ['NOT_FOUND'],
      security: 'public',
    },
    metadataAtPath: {
      method: 'get', path: `${METADATA_PATH}${surface.paths.mcp}`, tag: 'mcp', operationId: 'getMcpResourceMetadata',
      summary: 'RFC 9728 metadata of the MCP endpoint, at the path form clients derive from its URL',
      ok: { status: 200, schema: s.resourceMetadata }, problems: ['NOT_FOUND'], security: 'public',
    },
    // Refusals take the OAuth form (401), other failures are problems; 404 while the server is off.
    endpoint: {
      method: 'post', path: surface.paths.mcp, tag: 'mcp', operationId: 'postMcp', security: 'mcp',
      summary: 'MCP Streamable HTTP (JSON-RPC); a key with the mcp permission in x-api-key or Authorization: Bearer',
      body: s.jsonRpcMessage, bodyRequired: true,
      ok: { status: 200, schema: null }, problems: ['NOT_FOUND', 'PAYLOAD_TOO_LARGE'],
      answers: {
        200: { description: 'A JSON-RPC answer (JSON or an event stream)' },
        401: refusal,
        // The 2026-07-28 revision answers its protocol errors with HTTP statuses and the request's id.
        400: {
          description: 'A JSON-RPC error of the 2026-07-28 revision (missing _meta, headers that disagree with the body, '
            + 'an unknown revision), or a problem',
          schema: s.jsonRpcError, withProblems: true,
        },
        404: {
          description: 'A JSON-RPC error: "method not found" of the 2026-07-28 revision, or an Mcp-Session-Id not issued to this '
            + 'caller (initialize again); or the NOT_FOUND problem while the MCP server is off',
          schema: s.jsonRpcError, withProblems: true,
        },
        415: { description: 'A JSON-RPC error: the body is not JSON', schema: s.jsonRpcError },
      },
    },
    // No server-to-client stream and no session to end: both answer 405 (404 for a session id not the caller's).
    stream: {
      method: 'get', path: surface.paths.mcp, tag: 'mcp', operationId: 'getMcp', security: 'mcp',
      summary: 'Not offered: send messages with POST',
      ok: { status: 405, schema: s.problem, contentType: 'application/problem+json' },
      problems: ['NOT_FOUND', 'METHOD_NOT_ALLOWED'], answers: { 401: refusal },
    },
    end: {
      method: 'delete', path: surface.paths.mcp, tag: 'mcp', operationId: 'deleteMcp', security: 'mcp',
      summary: 'Not offered: no instance keeps a session to end',
      ok: { status: 405, schema: s.problem, contentType: 'application/problem+json' },
      problems: ['NOT_FOUND', 'METHOD_NOT_ALLOWED'], answers: { 401: refusal },
    },
  } satisfies Record<string, Operation>;
}

