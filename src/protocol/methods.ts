// The client-to-server method tables per era, from shared/spec/schema/{2026-07-28,2025-11-25}/schema.json
// (`ClientRequest`, `ClientNotification`).

import { wireTable } from './own-keys.js';

export const MODERN_CLIENT_REQUESTS: ReadonlySet<string> = new Set([
  'server/discover',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'subscriptions/listen',
  'prompts/list',
  'prompts/get',
  'tools/list',
  'tools/call',
  'completion/complete',
]);

/**
 * The 2026-07-28 requests no legacy revision has (2025-11-25 `ClientRequest` lacks them): a legacy client
 * sending one asks for a method its era does not know.
 */
export const MODERN_ONLY_REQUESTS: ReadonlySet<string> = new Set(['server/discover', 'subscriptions/listen']);

/**
 * The methods a client of any era sends that Gatehouse knows by name: what metrics label and span names may
 * carry. Any other is the client's choice (a server may have methods of its own, and a client may make
 * them up, as many as it likes), so it is `other` there.
 */
export const KNOWN_CLIENT_METHODS: ReadonlySet<string> = new Set([
  'initialize', 'ping', 'server/discover', 'tools/list', 'tools/call', 'prompts/list', 'prompts/get', 'resources/list',
  'resources/templates/list', 'resources/read', 'resources/subscribe', 'resources/unsubscribe', 'subscriptions/listen',
  'completion/complete', 'logging/setLevel', 'notifications/initialized', 'notifications/cancelled', 'notifications/progress',
  'notifications/roots/list_changed', 'tasks/get', 'tasks/result', 'tasks/list', 'tasks/cancel',
]);

/** Requests whose `Mcp-Name` header mirrors a body field (streamable-http.mdx §Standard Request Headers). */
export const NAME_FIELD: Readonly<Record<string, 'name' | 'uri'>> = wireTable({
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
});

export const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion';
export const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
export const META_CLIENT_INFO = 'io.modelcontextprotocol/clientInfo';
export const META_LOG_LEVEL = 'io.modelcontextprotocol/logLevel';
export const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo';
export const META_SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

/**
 * Resource subscriptions Gatehouse honours in one listen, or one legacy session, where it subscribes
 * upstream itself (the bridges, the catalog): each is a resources/subscribe upstream, and a listen of one
 * request could otherwise name a hundred thousand. The acknowledgment names those honoured
 * (2026-07-28/basic/patterns/subscriptions.mdx §Acknowledgment).
 */
export const MAX_RESOURCE_SUBSCRIPTIONS = 256;
