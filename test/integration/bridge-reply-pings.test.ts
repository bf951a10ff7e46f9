// A legacy server may ping on any stream it answers a request on, and the receiver MUST answer promptly
// (2025-11-25/basic/utilities/ping.mdx §Behavior Requirements; GATEWAY-REQUIREMENTS §2 and §16.1 "answer
// upstream ping locally"). Before `initialized` a server may send pings (2025-11-25/basic/lifecycle.mdx
// §Initialization). The modern-client bridge answered pings on a call's stream and on the GET stream; these
// are the other answer streams it reads: its sessions' initialize, the logging/setLevel it sends for a
// request's log level, and the resources/subscribe it sends for a listen.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import type { ServerResponse } from 'node:http';
import { jsonResult, sleep, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

type Msg = { id?: string | number; method?: string; result?: unknown; params?: Record<string, unknown> };

/** Ping ids the server sent, and those Gatehouse answered (with an empty result, by POST). */
const pinged: string[] = [];
const ponged = new Set<string>();
const waiting = new Map<string, () => void>();
let n = 0;

/** An SSE answer that pings first and answers once the ping is answered, or after 1.5 s all the same. */
function pingThenAnswer(res: ServerResponse, kind: string, answer: Record<string, unknown>, headers: Record<string, string> = {}): void {
  const id = `ping-${kind}-${++n}`;
  pinged.push(id);
  res.writeHead(200, { 'content-type': 'text/event-stream', ...headers });
  res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' })}\n\n`);
  const done = (): void => {
    waiting.delete(id);
    if (!res.writableEnded) res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', ...answer })}\n\n`);
  };
  waiting.set(id, done);
  setTimeout(done, 1_500).unref();
}

const up = await startFakeUpstream((req, res, body) => {
  if (req.method === 'DELETE') return void res.writeHead(200).end();
  if (req.method === 'GET') return void res.writeHead(405, { allow: 'POST, DELETE' }).end();
  const msg = JSON.parse(body) as Msg;
  if (msg.method === undefined) {
    // An answer of Gatehouse's: a pong when it is an empty result for a ping we sent.
    if (typeof msg.id === 'string' && JSON.stringify(msg.result) === '{}') {
      ponged.add(msg.id);
      waiting.get(msg.id)?.();
    }
    return void res.writeHead(202).end();
  }
  if (msg.method === 'server/discover') return void res.writeHead(400, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: Server not initialized"}}');
  if (msg.id === undefined) return void res.writeHead(202).end();
  const capabilities = { tools: {}, logging: {}, resources: { subscribe: true } };
  if (msg.method === 'initialize') {
    const result = { protocolVersion: '2025-11-25', capabilities, serverInfo: { name: 'pinging', version: '1' } };
    if (msg.id === 'gatehouse-probe') return jsonResult(res, body, result, { 'mcp-session-id': 'probe' });
    return pingThenAnswer(res, 'initialize', { id: msg.id, result }, { 'mcp-session-id': `s-${++n}` });
  }
  if (msg.method === 'logging/setLevel') return pingThenAnswer(res, 'setLevel', { id: msg.id, result: {} });
  if (msg.method === 'resources/subscribe') return pingThenAnswer(res, 'subscribe', { id: msg.id, result: {} });
  if (msg.method === 'tools/list') return jsonResult(res, body, { tools: [{ name: 't', inputSchema: { type: 'object' } }] });
  if (msg.method === 'resources/unsubscribe') return jsonResult(res, body, {});
  jsonResult(res, body, { content: [{ type: 'text', text: 'done' }] });
}, { handshake: false });
const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url }] });
after(async () => {
  await gw.close();
  await up.close();
});

const unanswered = (kind: string): string[] => pinged.filter((id) => id.startsWith(`ping-${kind}-`) && !ponged.has(id));

test('pings on the answers to initialize and logging/setLevel are answered', async () => {
  const call = modernRequest(1, 'tools/call', { name: 't', arguments: {}, _meta: { 'io.modelcontextprotocol/logLevel': 'debug' } });
  const res = await post(gw.url, call.body, call.headers);
  assert.match(res.text, /done/);
  assert.ok(pinged.some((id) => id.startsWith('ping-initialize-')) && pinged.some((id) => id.startsWith('ping-setLevel-')), pinged.join());
  assert.deepEqual(unanswered('initialize'), []);
  assert.deepEqual(unanswered('setLevel'), []);
});

test('a ping on the answer to a listen\'s resources/subscribe is answered', async () => {
  const listen = modernRequest(2, 'subscriptions/listen', { notifications: { resourceSubscriptions: ['file:///x'] } });
  const ac = new AbortController();
  const res = await request(gw.url, { method: 'POST', headers: listen.headers, body: listen.body, signal: ac.signal });
  let text = '';
  const reader = res.body[Symbol.asyncIterator]();
  for (let i = 0; i < 50 && !text.includes('acknowledged'); i++) {
    const next = await Promise.race([reader.next(), sleep(5_000).then(() => ({ done: true, value: undefined }))]);
    if (next.done) break;
    text += String(next.value);
  }
  ac.abort();
  await res.body.dump().catch(() => {});
  assert.match(text, /file:\/\/\/x/, 'the subscription was honoured');
  assert.ok(pinged.some((id) => id.startsWith('ping-subscribe-')), pinged.join());
  assert.deepEqual(unanswered('subscribe'), []);
});
