import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { sendProblem } from '../http/problem.ts';
import type { GatewayContext } from '../http/state.ts';

// A web page on another site can make a browser send requests to a name that resolves, moments
// later, to this gateway on loopback or the local network (DNS rebinding). The browser then sends
// that other name as Host and its page's origin as Origin. So /api/mcp answers only for the names
// the gateway is really reached by, and refuses the rest before any credential is looked at.

const LOOPBACK = ['localhost', '127.0.0.1', '[::1]'];

/** The hostname of a host[:port] (or a bare name or address), lower-cased, without the port. */
function hostnameOf(host: string): string | null {
  const bare = host.includes(':') && !host.startsWith('[') && host.split(':').length > 2 ? `[${host}]` : host;
  try {
    return new URL(`http://${bare}`).hostname.replace(/\.$/, '');
  } catch {
    return null;
  }
}

/** The hostnames /api/mcp accepts in Host (any port), in the order they are reported at start. */
export function acceptedMcpHosts(config: Pick<Config, 'publicUrl' | 'host' | 'mcpServer'>): string[] {
  const own = config.publicUrl ? [new URL(config.publicUrl).hostname] : [...LOOPBACK, config.host];
  const names = [...own, ...config.mcpServer.allowedHosts].map(hostnameOf).filter((h): h is string => h !== null);
  return [...new Set(names)];
}

export const isLoopbackHost = (host: string) => LOOPBACK.includes(hostnameOf(host) ?? '') || /^127\./.test(host);

function originAccepted(origin: string, hosts: ReadonlySet<string>, origins: ReadonlySet<string>): boolean {
  if (origins.has(origin.toLowerCase())) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // "null" (a sandboxed or file page) and anything unparseable
  }
  return (url.protocol === 'http:' || url.protocol === 'https:') && hosts.has(url.hostname.replace(/\.$/, ''));
}

/** Refuses, with 403, a request to the MCP endpoint whose Host or Origin is not one of the gateway's own. */
export function guardMcpHost(config: Pick<Config, 'publicUrl' | 'host' | 'mcpServer' | 'surface'>) {
  const mcpPath = config.surface.paths.mcp.toLowerCase();
  const hosts = new Set(acceptedMcpHosts(config));
  const origins = new Set(config.mcpServer.allowedOrigins.map((o) => o.replace(/\/$/, '').toLowerCase()));
  return function mcpHostGuard(ctx: GatewayContext): boolean {
    const path = ctx.path.toLowerCase();
    if (!config.surface.features.mcp || (path !== mcpPath && !path.startsWith(mcpPath + '/'))) return false;
    const host = hostnameOf(ctx.get('host'));
    const origin = ctx.get('origin');
    const refused = host === null || !hosts.has(host) ? 'The Host header does not name this gateway.'
      : origin !== '' && !originAccepted(origin, hosts, origins) ? 'The Origin header does not name this gateway.'
      : null;
    if (!refused) return false;
    ctx.set('Cache-Control', 'no-store');
    const why = `${refused} The MCP endpoint answers only for the hosts it is configured for`
      + ' (mcpServer.allowedHosts, mcpServer.allowedOrigins).';
    sendProblem(ctx, new AppError('FORBIDDEN', why));
    return true;
  };
}
