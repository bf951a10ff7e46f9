// Every kind of Outcome written onto a 2024-11-05 stream as `message` events: a request is never left
// without a response for its id (refusals, broken or empty upstream answers become JSON-RPC errors), and
// nothing is sent that answers no request of the client.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { GatewayError } from '../../../src/errors.js';
import { CallStream } from '../../../src/pipeline/call-stream.js';
import type { Outcome } from '../../../src/pipeline/outcome.js';
import { RelayBody } from '../../../src/pipeline/relay-body.js';
import { deliverOutcome, type MessageOut } from '../../../src/edge/sse-outcome.js';

const quiet = { debug() {}, warn() {} };

function out(): MessageOut & { sent: unknown[] } {
  const sent: unknown[] = [];
  return { sent, signal: new AbortController().signal, send: async (json) => (sent.push(JSON.parse(json)), true) };
}

function relay(contentType: string, body: string | Readable, status = 200): Outcome {
  return {
    kind: 'relay', status, headers: { 'content-type': contentType }, body: RelayBody.fromReadable(typeof body === 'string' ? Readable.from([Buffer.from(body)]) : body), requestId: 1, upstream: 'up',
    failureOf: (err) => new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `broken: ${String(err)}`, 'up'),
  };
}

const errorCodeOf = (m: unknown): unknown => (m as { error?: { data?: { code?: unknown } } }).error?.data?.code;

test('json: the message; a refusal: the error for the request, nothing for a notification', async () => {
  const o = out();
  const d = await deliverOutcome(o, { kind: 'json', status: 200, message: { jsonrpc: '2.0', id: 1, result: { isError: true, content: [] } } }, { id: 1, callId: 'c', log: quiet });
  assert.deepEqual(d, { status: 200, aborted: false, toolError: true });
  const refusal = { kind: 'transport' as const, code: 'x', status: 403, rpcCode: -32600, message: 'no' };
  const r = await deliverOutcome(o, { kind: 'refused', refusal }, { id: 2, callId: 'c', log: quiet });
  assert.equal(r.status, 403);
  assert.deepEqual(o.sent[1], { jsonrpc: '2.0', id: 2, error: { code: -32600, message: 'no' } });
  await deliverOutcome(o, { kind: 'refused', refusal }, { id: null, callId: 'c', log: quiet });
  await deliverOutcome(o, { kind: 'empty', status: 202 }, { id: null, callId: 'c', log: quiet });
  assert.equal(o.sent.length, 2);
});

test('stream: notifications and requests before the response, in order; a failure as the error', async () => {
  const o = out();
  const s = new CallStream({ requestId: 5, mode: 'call', acceptsSse: true });
  s.push({ jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1, progressToken: 't' } });
  s.push({ jsonrpc: '2.0', id: 'g1', method: 'elicitation/create', params: {} });
  s.comment();
  s.finish({ jsonrpc: '2.0', id: 5, result: { protocolVersion: '2025-06-18' } });
  const seen: unknown[] = [];
  const d = await deliverOutcome(o, { kind: 'stream', stream: s }, { id: 5, callId: 'c', log: quiet, onResponse: (r) => seen.push(r) });
  assert.equal(d.status, 200);
  assert.deepEqual(o.sent.map((m) => (m as { method?: string }).method ?? 'response'), ['notifications/progress', 'elicitation/create', 'response']);
  assert.equal(seen.length, 1);
  const failing = new CallStream({ requestId: 6, mode: 'call', acceptsSse: true });
  failing.fail(new GatewayError('GW_ERR_UPSTREAM_TIMEOUT', 'slow', 'up'));
  const f = await deliverOutcome(o, { kind: 'stream', stream: failing }, { id: 6, callId: 'c', log: quiet });
  assert.equal(f.status, 504);
  assert.equal(errorCodeOf(o.sent.at(-1)), 'GW_ERR_UPSTREAM_TIMEOUT');
});

test("relay SSE: events as they come (multi-line data joined); a stream that ends unanswered gets the request's error", async () => {
  const o = out();
  const body = 'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress",\ndata: "params":{"progress":1}}\n\n: comment\n\nid: 1\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n';
  await deliverOutcome(o, relay('text/event-stream', body), { id: 1, callId: 'c', log: quiet });
  assert.deepEqual(o.sent, [{ jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1 } }, { jsonrpc: '2.0', id: 1, result: {} }]);
  const cut = out();
  await deliverOutcome(cut, relay('text/event-stream', 'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n'), { id: 1, callId: 'c', log: quiet });
  assert.equal(cut.sent.length, 2);
  assert.equal(errorCodeOf(cut.sent[1]), 'GW_ERR_UPSTREAM_BAD_RESPONSE');
  const broken = out();
  const failing = new Readable({ read() {} });
  failing.push('data: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n');
  setTimeout(() => failing.destroy(new Error('reset')), 10);
  await deliverOutcome(broken, relay('text/event-stream', failing), { id: 1, callId: 'c', log: quiet });
  assert.match(String((broken.sent[1] as { error: { message: string } }).error.message), /broken: Error: reset/);
});

test('relay JSON: one event; an empty or unreadable answer to a request becomes its error', async () => {
  const o = out();
  await deliverOutcome(o, relay('application/json', '{\n  "jsonrpc": "2.0",\n  "id": 1,\n  "result": {}\n}'), { id: 1, callId: 'c', log: quiet });
  assert.deepEqual(o.sent, [{ jsonrpc: '2.0', id: 1, result: {} }]);
  const accepted = out();
  await deliverOutcome(accepted, relay('application/json', '', 202), { id: null, callId: 'c', log: quiet });
  assert.deepEqual(accepted.sent, []);
  const page = out();
  const d = await deliverOutcome(page, relay('text/html', '<h1>Bad gateway</h1>', 502), { id: 1, callId: 'c', log: quiet });
  assert.equal(d.status, 502);
  assert.equal(errorCodeOf(page.sent[0]), 'GW_ERR_UPSTREAM_BAD_RESPONSE');
  // A response for another id answers nothing the client asked.
  const other = out();
  await deliverOutcome(other, relay('application/json', '{"jsonrpc":"2.0","id":99,"result":{}}'), { id: 1, callId: 'c', log: quiet });
  assert.equal(other.sent.length, 1);
  assert.equal(errorCodeOf(other.sent[0]), 'GW_ERR_UPSTREAM_BAD_RESPONSE');
});

test('a stream already gone: the answer is dropped and its producer hears of it', async () => {
  const ac = new AbortController();
  ac.abort();
  const s = new CallStream({ requestId: 1, mode: 'call', acceptsSse: true });
  let cancelled = false;
  s.onClose(() => (cancelled = true));
  const d = await deliverOutcome({ signal: ac.signal, send: async () => true }, { kind: 'stream', stream: s }, { id: 1, callId: 'c', log: quiet });
  assert.equal(d.aborted, true);
  assert.equal(cancelled, true);
});

test('a relayed stream that goes quiet: the connection closing ends its delivery and stops the upstream', async () => {
  // A listen stream as an upstream holds it: one event, then nothing until someone stops it.
  const upstream = new Readable({ read() {} });
  upstream.push(Buffer.from('data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n'));
  const ac = new AbortController();
  const sent: unknown[] = [];
  const o: MessageOut = { signal: ac.signal, send: async (json) => (sent.push(JSON.parse(json)), ac.abort(), true) };
  const d = await deliverOutcome(o, relay('text/event-stream', upstream), { id: null, callId: 'c', log: quiet });
  assert.equal(sent.length, 1);
  assert.equal(d.aborted, true);
  assert.equal(upstream.destroyed, true);
});

test('a JSON answer still arriving: the connection closing ends its delivery and stops the upstream', async () => {
  // A POST's answer relayed as one JSON body, half of it sent, the rest held back by the upstream.
  const upstream = new Readable({ read() {} });
  upstream.push(Buffer.from('{"jsonrpc":"2.0","id":1,"result":{"content":['));
  const ac = new AbortController();
  const sent: unknown[] = [];
  const o: MessageOut = { signal: ac.signal, send: async (json) => (sent.push(JSON.parse(json)), true) };
  const delivering = deliverOutcome(o, relay('application/json', upstream), { id: 1, callId: 'c', log: quiet });
  // The connection closes once the body is being read (its first bytes taken).
  await new Promise((r) => setImmediate(r));
  ac.abort();
  // Until 5 December the body was dropped under collect(), which never settled: the call stayed in flight.
  const d = await delivering;
  assert.deepEqual(sent, []);
  assert.equal(d.aborted, true);
  assert.equal(upstream.destroyed, true);
});
