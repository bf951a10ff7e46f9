// A listen across upstreams (src/catalog/catalog-listen.ts) runs as a task of its own. Whatever throws in
// it ends that listen with an error; it never becomes an unhandled rejection, which ends the process (a
// `resourceSubscriptions: 0` did, fuzz seed 978031999, before the front door checked the filter's types).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fanOutListen } from '../../../src/catalog/catalog-listen.js';
import { createLogger } from '../../../src/log/logger.js';
import type { ModernMember } from '../../../src/pipeline/ports.js';
import type { JsonRpcRequest } from '../../../src/protocol/jsonrpc.js';

test('a listen whose filter breaks the task ends with an error response and a log line; the process goes on', async () => {
  const lines: string[] = [];
  const log = createLogger('info', (line) => lines.push(line));
  const member = { name: 'm', modernFace: async () => { throw new Error('not reached'); } } as unknown as ModernMember;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    // Past the front door's type check, as a caller inside Gatehouse could still hand it.
    const request = { jsonrpc: '2.0', id: 7, method: 'subscriptions/listen', params: { notifications: { resourceSubscriptions: 0 } } } as unknown as JsonRpcRequest;
    const reply = fanOutListen(request, [member], () => undefined, () => {}, undefined, log);
    const messages = [];
    for await (const m of reply.messages) messages.push(m);
    assert.equal(messages.length, 1, JSON.stringify(messages));
    const answer = messages[0] as { id: number; error?: { code: number; message: string } };
    assert.equal(answer.id, 7);
    assert.equal(answer.error?.code, -32603);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(unhandled, []);
    assert.ok(lines.some((l) => l.includes('a listen across upstreams failed')), lines.join('\n'));
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});

test('a listen across upstreams passes on at most 256 resource subscriptions (the first ones, once each)', async () => {
  const filters: Array<{ resourceSubscriptions?: string[] }> = [];
  const member = {
    name: 'm',
    modernFace: async () => ({
      capabilities: { resources: { subscribe: true } },
      http: false,
      messages: {
        upstream: 'm',
        post: async (msg: JsonRpcRequest) => {
          filters.push((msg.params as { notifications: { resourceSubscriptions?: string[] } }).notifications);
          return { status: 200, headers: {}, messages: (async function* () { yield { jsonrpc: '2.0' as const, method: 'notifications/subscriptions/acknowledged', params: { notifications: (msg.params as { notifications: object }).notifications } }; })() };
        },
      },
    }),
  } as unknown as ModernMember;
  const uris = ['file:///0', ...Array.from({ length: 1_000 }, (_, i) => `file:///${i}`)];
  const request = { jsonrpc: '2.0', id: 9, method: 'subscriptions/listen', params: { notifications: { resourceSubscriptions: uris } } } as unknown as JsonRpcRequest;
  const stop = new AbortController();
  const reply = fanOutListen(request, [member], () => undefined, () => {}, stop.signal, createLogger('error', () => {}));
  const first = await reply.messages.next();
  assert.equal((first.value as { method?: string }).method, 'notifications/subscriptions/acknowledged');
  assert.deepEqual(filters[0]?.resourceSubscriptions, Array.from({ length: 256 }, (_, i) => `file:///${i}`));
  stop.abort();
});

// subscriptions.mdx §Graceful Closure: a listen the client ends is ended upstream too. One the client left
// while a member was still being reached (its modernFace pending) was posted with a signal that had already
// fired, and an abort listener added then is never called: the member kept the listen, and with it the
// client's request and response, for good (the edge fuzz's exchanges-outlive-clients, on the catalog).
test('a listen the client leaves while a member is being reached opens nothing on that member', async () => {
  let reached!: () => void;
  const reaching = new Promise<void>((r) => (reached = r));
  const posted: boolean[] = [];
  const member = {
    name: 'm',
    modernFace: async () => {
      await reaching;
      return {
        capabilities: { tools: { listChanged: true } },
        http: false,
        messages: {
          upstream: 'm',
          post: async (msg: JsonRpcRequest, _headers: unknown, signal?: AbortSignal) => {
            posted.push(signal?.aborted ?? false);
            return { status: 200, headers: {}, messages: (async function* () { yield { jsonrpc: '2.0' as const, method: 'notifications/subscriptions/acknowledged', params: { notifications: (msg.params as { notifications: object }).notifications } }; })() };
          },
        },
      };
    },
  } as unknown as ModernMember;
  const request = { jsonrpc: '2.0', id: 11, method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true } } } as unknown as JsonRpcRequest;
  const stop = new AbortController();
  fanOutListen(request, [member], () => undefined, () => {}, stop.signal, createLogger('error', () => {}));
  stop.abort();
  reached();
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  assert.deepEqual(posted, [], 'the member was asked to listen for a client already gone');
});
