import type { Config } from './config.ts';
import type { Gateway, GatewayOptions } from './gateway/options.ts';
import { serve } from './gateway/serve.ts';
import { buildServices } from './gateway/services.ts';
import { openStores } from './gateway/stores.ts';

export type { Gateway, GatewayOptions } from './gateway/options.ts';
export { HEADERS_TIMEOUT_MS } from './gateway/serve.ts';

/**
 * The composition root: config -> pool and counter engine -> services -> app -> listen. Each step
 * is a file of src/gateway/; nothing imports this one (the CLI is handed it by bin/keygate.js).
 */
export async function startGateway(config: Config, opts: GatewayOptions = {}): Promise<Gateway> {
  const stores = await openStores(config, opts);
  const services = await buildServices(config, opts, stores);
  return serve(config, opts, stores, services);
}
