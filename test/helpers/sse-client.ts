// A 2024-11-05 HTTP+SSE client (the v1 SDK's) connected through a test gateway to one upstream, counting the
// list changes it hears: for tests of what Gatehouse relays from the upstream's GET stream to such a client.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { startGateway, type TestGateway } from './gateway.js';

export interface SseClientThroughGateway {
  gw: TestGateway;
  /** How many notifications/tools/list_changed the client has heard so far. */
  listChanges(): number;
  /** Closes the client, then the gateway (not the upstream, which is the test's). */
  close(): Promise<void>;
}

/** `upstream` is served (era legacy) by a gateway with listen.ssePath `/sse`, and the client connects there. */
export async function connectSseClientThroughGateway(upstream: { name: string; url: string }, clientName: string): Promise<SseClientThroughGateway> {
  const gw = await startGateway({ listen: { ssePath: '/sse' }, upstreams: [{ ...upstream, era: 'legacy' }] });
  const client = new Client({ name: clientName, version: '1' }, { capabilities: {} });
  let changes = 0;
  client.fallbackNotificationHandler = async (n) => void (n.method === 'notifications/tools/list_changed' && changes++);
  const close = async () => {
    await client.close().catch(() => {});
    await gw.close();
  };
  try {
    await client.connect(new SSEClientTransport(new URL('/sse', gw.origin)), { timeout: 10_000 });
  } catch (err) {
    await close();
    throw err;
  }
  return { gw, listChanges: () => changes, close };
}
