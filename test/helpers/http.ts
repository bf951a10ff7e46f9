// Raw HTTP helpers for tests that need to see exactly what goes over the wire.

import { request } from 'undici';

export const LEGACY_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

export function rpc(id: number | string, method: string, params: Record<string, unknown> = {}): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method, params });
}

/** `headers`: a list value is sent as that many fields of the one name. */
export async function post(url: string, body: string, headers: Record<string, string | string[]> = LEGACY_HEADERS, signal?: AbortSignal) {
  const res = await request(url, { method: 'POST', headers, body, signal });
  const text = await res.body.text();
  // `any`: tests index freely into whatever JSON came back and assert on it.
  return { status: res.statusCode, headers: res.headers, text, json: () => JSON.parse(text) as Record<string, any> };
}

export const MODERN_META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

/** A well-formed 2026-07-28 request: body with the required `_meta`, and the mirrored headers. */
export function modernRequest(id: number | string, method: string, params: Record<string, unknown> = {}): { body: string; headers: Record<string, string> } {
  const headers: Record<string, string> = { ...LEGACY_HEADERS, 'mcp-protocol-version': '2026-07-28', 'mcp-method': method };
  const name = method === 'resources/read' ? params.uri : method === 'tools/call' || method === 'prompts/get' ? params.name : undefined;
  if (typeof name === 'string') headers['mcp-name'] = name;
  const meta = { ...MODERN_META, ...((params._meta as object | undefined) ?? {}) };
  return { body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } }), headers };
}

/**
 * Starts a legacy session through the gateway, as a client would, and returns the id the answer issued:
 * Gatehouse serves a session only to the caller it was issued to (2025-11-25 security best practices
 * §Session Hijacking), so tests that name a session must get one this way first.
 */
export async function legacySession(url: string, headers: Record<string, string> = {}, version = '2025-11-25'): Promise<string> {
  const init = await post(url, rpc('init', 'initialize', { protocolVersion: version, capabilities: {}, clientInfo: { name: 'test', version: '0' } }), { ...LEGACY_HEADERS, ...headers });
  const id = init.headers['mcp-session-id'];
  if (typeof id !== 'string') throw new Error(`initialize issued no session: HTTP ${init.status} ${init.text}`);
  return id;
}

/**
 * A legacy client's handshake (initialize, then notifications/initialized), for tests that also look at a
 * refused initialize: `headers` (the session's, for later requests) is undefined when no session was issued.
 */
export async function openLegacySession(url: string, clientName: string, version = '2025-11-25') {
  const init = await post(url, rpc(`init-${clientName}`, 'initialize', { protocolVersion: version, capabilities: {}, clientInfo: { name: clientName, version: '1' } }));
  const id = init.headers['mcp-session-id'];
  if (init.status !== 200 || typeof id !== 'string') return { init, headers: undefined };
  const headers = { ...LEGACY_HEADERS, 'mcp-session-id': id, 'mcp-protocol-version': version };
  await post(url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), headers);
  return { init, headers };
}

/**
 * A request to the admin API, as an operator's script or the inbox page makes it: `bearer` (the admin token
 * or a reviewer's access token) when given, `body` sent as JSON when given. Every admin answer is JSON, so
 * it is parsed at once: `json` is the parsed body (a property, unlike post()'s), `text` the raw one.
 */
export async function adminRequest(adminUrl: string, method: 'GET' | 'POST', path: string, opts: { bearer?: string | undefined; body?: unknown } = {}) {
  const res = await request(`${adminUrl}${path}`, {
    method,
    headers: { ...(opts.bearer ? { authorization: `Bearer ${opts.bearer}` } : {}), ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
  });
  const text = await res.body.text();
  // `any`: tests index freely into whatever JSON came back and assert on it.
  return { status: res.statusCode, headers: res.headers, text, json: JSON.parse(text) as Record<string, any> };
}
