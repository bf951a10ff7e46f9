// Router (src/upstream/stdio-messages.ts): which open call a stdio child's message belongs to, when the
// message does not say. A listen stream carries only what subscriptions produce (2026-07-28 subscriptions.mdx),
// never a log message or another call's notification.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { JsonRpcMessage } from '../../../src/protocol/jsonrpc.js';
import { Router, type CallEntry } from '../../../src/upstream/stdio-messages.js';

function entry(id: string, listen: boolean): CallEntry & { got: JsonRpcMessage[] } {
  const got: JsonRpcMessage[] = [];
  return { id, listen, own: false, progressToken: undefined, push: (m) => got.push(m), got };
}

const log = { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'hello' } } as JsonRpcMessage;
const listChanged = { jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: {} } as JsonRpcMessage;

test('with only a listen open, a log message does not go on the listen stream; a list change does', () => {
  const router = new Router(() => {});
  const listen = entry('listen-1', true);
  router.calls.push(listen);
  const elsewhere: JsonRpcMessage[] = [];
  router.listeners.add((m) => elsewhere.push(m));
  router.route(log);
  assert.deepEqual(listen.got, [], 'not on the listen stream');
  assert.deepEqual(elsewhere, [log], 'handed to the process\'s listeners instead');
  router.route(listChanged);
  assert.deepEqual(listen.got, [listChanged]);
});

test('with only a call open, a log message goes with that call', () => {
  const router = new Router(() => {});
  const call = entry('call-1', false);
  router.calls.push(call);
  router.route(log);
  assert.deepEqual(call.got, [log]);
});

test('a ping from the server is answered at once, however many calls are in flight, or none (basic/utilities/ping.mdx)', () => {
  const refused: unknown[] = [];
  const answered: Array<{ id: unknown; result: unknown }> = [];
  const router = new Router((request) => refused.push(request.id), (request, result) => answered.push({ id: request.id, result }));
  const ping = (id: string) => ({ jsonrpc: '2.0', id, method: 'ping' }) as JsonRpcMessage;
  router.route(ping('p-0')); // nothing in flight: it would have been dropped
  const a = entry('call-a', false);
  const b = entry('call-b', false);
  router.calls.push(a, b);
  router.route(ping('p-2')); // two in flight: it would have been refused
  router.calls.splice(1);
  router.route(ping('p-1')); // one in flight: it would have gone to that call's client
  assert.deepEqual(answered, [{ id: 'p-0', result: {} }, { id: 'p-2', result: {} }, { id: 'p-1', result: {} }]);
  assert.deepEqual(refused, []);
  assert.deepEqual([a.got, b.got], [[], []]);
});

test('a server request with no call to carry it and no GET stream open is answered, not dropped; with a stream open it goes there', () => {
  // Every request gets a response (2025-11-25/basic/index.mdx §Responses); stdio-idle-requests.test.ts has the wire.
  const unanswerable: unknown[] = [];
  const router = new Router(() => {}, () => {}, (request) => unanswerable.push(request.id));
  const roots = (id: string) => ({ jsonrpc: '2.0', id, method: 'roots/list' }) as JsonRpcMessage;
  router.route(roots('r-0')); // nothing in flight
  const listen = entry('listen-1', true);
  router.calls.push(listen);
  router.route(roots('r-1')); // only a listen: it never owns a server request
  const elsewhere: JsonRpcMessage[] = [];
  router.listeners.add((m) => elsewhere.push(m));
  router.route(roots('r-2')); // a GET stream's reader answers it (listen-hub.ts)
  assert.deepEqual(unanswerable, ['r-0', 'r-1']);
  assert.deepEqual(elsewhere, [roots('r-2')]);
  assert.deepEqual(listen.got, []);
});
