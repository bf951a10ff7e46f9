// A 2026-07-28 client (the v2 SDK's, pinned to that version) of the gateway that listens to resources: it keeps
// the URI of every notifications/resources/updated it is sent. The modern counterpart of legacy-subscriber.ts.

import { Client } from '@modelcontextprotocol/client';

export interface ModernListener {
  /** Not yet connected. */
  client: Client;
  /** The URIs of the notifications/resources/updated received, in order. */
  heard: string[];
}

export function modernListener(): ModernListener {
  const client = new Client({ name: 'listener', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  const heard: string[] = [];
  client.setNotificationHandler('notifications/resources/updated', async (n) => void heard.push(n.params.uri));
  return { client, heard };
}
