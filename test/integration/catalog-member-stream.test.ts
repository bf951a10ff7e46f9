// What a catalog member's answer stream may put before a modern client. Spec:
// 2026-07-28/basic/transports/streamable-http.mdx §Receiving Messages (on a request's SSE stream a server
// MUST NOT send JSON-RPC requests, only notifications about that request, then the response); JSON-RPC 2.0
// §5 (a response answers the request whose id it carries). A modern member that breaks these (a fake one,
// misbehaving on purpose) must not break the client's call: Gatehouse is the server its client talks to.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const complete = { resultType: 'complete', ttlMs: 0, cacheScope: 'public' };
const sse = (m: unknown): string => `data: ${JSON.stringify(m)}\n\n`;
/** Its tool `noisy` answers on a stream that first carries a server request and a stray response. */
const noisy = await startFakeUpstream((_req, res, body) => {
  const msg = JSON.parse(body) as { id: unknown; method: string };
  if (msg.method === 'tools/list') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { tools: [{ name: 'noisy', inputSchema: { type: 'object' } }], ...complete } }));
  if (msg.method !== 'tools/call') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { resultType: 'complete' } }));
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(sse({ jsonrpc: '2.0', id: 'srv-1', method: 'elicitation/create', params: { message: 'a legacy habit', requestedSchema: { type: 'object' } } }));
  res.write(sse({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p', progress: 1 } }));
  res.write(sse({ jsonrpc: '2.0', id: 'not-yours', result: { content: [{ type: 'text', text: 'stray' }] } }));
  res.end(sse({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'the answer' }], resultType: 'complete' } }));
}, { handshake: 'modern' });
const quiet = await startFakeUpstream((_req, res, body) => {
  const msg = JSON.parse(body) as { id: unknown; method: string };
  const result = msg.method === 'tools/list' ? { tools: [], ...complete } : { resultType: 'complete' };
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
}, { handshake: 'modern' });
const gw = await startGateway({ upstreams: [{ name: 'noisy', url: noisy.url }, { name: 'quiet', url: quiet.url }] });
after(async () => {
  await gw.close();
  await noisy.close();
  await quiet.close();
});

/** Every JSON-RPC message of an answer, JSON or SSE. */
function messagesOf(text: string): Array<Record<string, any>> {
  if (text.startsWith('{')) return [JSON.parse(text) as Record<string, any>];
  return text.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)) as Record<string, any>);
}

test('§Receiving Messages: the client gets its own response, never another id\'s, and no server request; notifications about the call still come', async () => {
  const { body, headers } = modernRequest(7, 'tools/call', { name: 'noisy_noisy', arguments: {}, _meta: { progressToken: 'p' } });
  const res = await post(gw.url, body, headers);
  assert.equal(res.status, 200, res.text);
  const messages = messagesOf(res.text);
  assert.deepEqual(messages.filter((m) => m.method !== undefined && m.id !== undefined), [], `no server request reaches a modern client: ${res.text}`);
  const responses = messages.filter((m) => m.method === undefined);
  assert.deepEqual(responses.map((m) => m.id), [7], `one response, to request 7: ${res.text}`);
  assert.equal(responses[0]!.result.content[0].text, 'the answer');
  assert.ok(messages.some((m) => m.method === 'notifications/progress'), 'its progress is relayed');
});
