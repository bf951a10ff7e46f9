// Raw HTTP helpers for tests that need to see exactly what goes over the wire.

import { request } from 'undici';

export const LEGACY_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

export function rpc(id: number | string, method: string, params: Record<string, unknown> = {}): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method, params });
}

export async function post(url: string, body: string, headers: Record<string, string> = LEGACY_HEADERS, signal?: AbortSignal) {
  const res = await request(url, { method: 'POST', headers, body, signal });
  const text = await res.body.text();
  // `any`: tests index freely into whatever JSON came back and assert on it.
  return { status: res.statusCode, headers: res.headers, text, json: () => JSON.parse(text) as Record<string, any> };
}
