// A 2025-11-25 client (the v1 SDK's) of the gateway that subscribes to resources: it keeps the URI of every
// notifications/resources/updated it is sent, for the tests of the legacy-subscribe bridge.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

export interface LegacySubscriber {
  client: Client;
  /** The URIs of the notifications/resources/updated received, in order. */
  updated: string[];
  /** Connects to the gateway's MCP endpoint (which opens the client's GET stream). */
  connect(url: string): Promise<void>;
}

export function legacySubscriber(name = 'subscriber'): LegacySubscriber {
  const client = new Client({ name, version: '1' });
  const updated: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => void updated.push(n.params.uri));
  return { client, updated, connect: (url) => client.connect(new StreamableHTTPClientTransport(new URL(url))) };
}
