// A legacy (2025-11-25) upstream that announces tool-list changes and whose GET stream each test scripts
// (answered and ended at once, refused, kept open), for the tests of the bridge that feeds a modern
// subscriptions/listen from that GET stream (GATEWAY-REQUIREMENTS §16.1 "Subscriptions ⇄ GET stream").
// A fake, because these upstreams must misbehave on purpose.

import type { ServerResponse } from 'node:http';
import { request, type Dispatcher } from 'undici';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { modernRequest } from './http.js';

/**
 * `onGet` answers each GET; POSTs get an initialize result naming `serverName` (session `s-1`), an empty
 * result for any other request, 202 for notifications; a DELETE gets 200.
 */
export function startLegacyGetUpstream(serverName: string, onGet: (res: ServerResponse) => void): Promise<FakeUpstream> {
  return startFakeUpstream((req, res, body) => {
    if (req.method === 'GET') return onGet(res);
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    const msg = JSON.parse(body) as { id?: unknown; method?: string };
    if (msg.id === undefined) return void res.writeHead(202).end();
    const result = msg.method === 'initialize' ? { protocolVersion: '2025-11-25', capabilities: { tools: { listChanged: true } }, serverInfo: { name: serverName, version: '1' } } : {};
    res.writeHead(200, { 'content-type': 'application/json', ...(msg.method === 'initialize' ? { 'mcp-session-id': 's-1' } : {}) }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
  });
}

/** A modern client's subscriptions/listen (id 1) for tool-list changes, open until `signal` aborts. */
export function listenForToolChanges(gatewayUrl: string, signal: AbortSignal): Promise<Dispatcher.ResponseData> {
  const listen = modernRequest(1, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
  return request(gatewayUrl, { method: 'POST', headers: listen.headers, body: listen.body, signal });
}
