// A gateway in front of the counting upstream (modern era, named `up`), for tests of policy stages that
// must see what ran upstream and what did not. The caller closes both (the gateway first).

import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from './gateway.js';

/** `config`: the rest of the gateway's config (auth, policy, admin, …), beside its one upstream. */
export async function startGatewayOverCountingUpstream(config: Record<string, unknown>): Promise<{ up: CountingUpstream; gw: TestGateway }> {
  const up = await startCountingUpstream('modern');
  try {
    const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], ...config });
    return { up, gw };
  } catch (err) {
    await up.close();
    throw err;
  }
}
