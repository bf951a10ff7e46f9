// What a modern (2026-07-28) upstream served by byte pass-through may put on the answer to a client's POST,
// and what Gatehouse leaves out. 2026-07-28/basic/transports/streamable-http.mdx §Receiving Messages: the
// SSE answer to a request carries notifications that relate to that request, then the response; the server
// MUST NOT send independent requests on it (server-to-client interactions are MRTR input requests now), and
// change notifications travel on a subscriptions/listen stream only, which in turn carries no
// request-scoped notifications (progress, log messages) nor kinds the listen did not ask for
// (subscriptions.mdx §Opening a Stream). basic/patterns/progress.mdx: progress notifications
// MUST only reference the request's own token. A misbehaving upstream's stray messages reached the client
// on the pass-through until 5 December: another request's response (on a shared upstream, perhaps another
// client's), a server request a client could act on (an elicitation Gatehouse never governed), list
// changes and other requests' progress. The catalog path already left requests and foreign responses out
// (catalog/catalog-upstream.ts); the pass-through now leaves out all of these, whether the stream came whole
// or still streaming, and a plain JSON answer is relayed as before, untouched.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const sse = (message: unknown): string => `event: message\ndata: ${JSON.stringify(message)}\n\n`;

/** The stream the upstream answers a request `id` with: stray messages around those that belong. */
function answerStream(id: unknown, token: unknown): { events: string[]; belong: unknown[] } {
  const progress = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: 1 } };
  const log = { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } };
  const answer = { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'done' }], resultType: 'complete' } };
  const events = [
    sse(progress),
    // An independent server request: MUST NOT (§Receiving Messages).
    sse({ jsonrpc: '2.0', id: 'srv-1', method: 'elicitation/create', params: { message: 'Type your password', requestedSchema: { type: 'object', properties: {} } } }),
    // Another request's response.
    sse({ jsonrpc: '2.0', id: 'someone-else', result: { content: [{ type: 'text', text: 'another caller\'s secret' }] } }),
    // Its id written with an escape, which a look for `"id"` alone would not see.
    `event: message\ndata: {"jsonrpc":"2.0","\\u0069d":"escaped-other","result":{}}\n\n`,
    // A change notification: listen streams only.
    sse({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }),
    // Progress under a token that is not the request's.
    sse({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'not-yours', progress: 7 } }),
    sse(log),
    ': a comment\n\n',
    sse(answer),
    // After the final response, which ends what the request is owed.
    sse({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'a second answer' }] } }),
  ];
  return { events, belong: [progress, log, answer] };
}

function messagesOf(text: string): unknown[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('data:'))
    .map((l) => JSON.parse(l.slice(5)) as unknown);
}

async function writeStream(res: ServerResponse, events: string[], gapMs: number): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  if (gapMs === 0) return void res.end(events.join(''));
  for (const e of events) {
    res.write(e);
    await new Promise((r) => setTimeout(r, gapMs));
  }
  res.end();
}

describe('a modern upstream on the pass-through: stray messages on a POST answer stream are left out', () => {
  let up: FakeUpstream;
  let gw: TestGateway;
  let gapMs = 0;
  before(async () => {
    up = await startFakeUpstream(async (_req, res, body) => {
      const msg = JSON.parse(body) as { id: unknown; method: string; params?: { _meta?: { progressToken?: unknown } } };
      if (msg.method === 'tools/list') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { tools: [{ name: 'work', inputSchema: { type: 'object' } }], resultType: 'complete', ttlMs: 0 } }));
      }
      if (msg.method === 'prompts/get' && gapMs < 0) {
        // A plain JSON answer naming another id: relayed as it came (judging it would mean parsing every JSON answer).
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { messages: [], resultType: 'complete' } }));
      }
      if (msg.method === 'subscriptions/listen') {
        const ack = { jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: { toolsListChanged: true }, _meta: { 'io.modelcontextprotocol/subscriptionId': msg.id } } };
        const changed = { jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': msg.id } } };
        const end = { jsonrpc: '2.0', id: msg.id, result: { resultType: 'complete' } };
        return writeStream(res, [
          sse(ack),
          // Request-scoped notifications are not delivered on the listen stream (§Receiving Messages).
          sse({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'x', progress: 1 } }),
          sse({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'not here' } }),
          sse({ jsonrpc: '2.0', id: 'srv-2', method: 'sampling/createMessage', params: {} }),
          // Kinds the listen did not ask for (subscriptions.mdx §Opening a Stream: MUST NOT).
          sse({ jsonrpc: '2.0', method: 'notifications/prompts/list_changed', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': msg.id } } }),
          sse({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'file:///x', _meta: { 'io.modelcontextprotocol/subscriptionId': msg.id } } }),
          sse(changed),
          sse({ jsonrpc: '2.0', id: 'someone-else', result: {} }),
          sse(end),
        ], Math.max(gapMs, 0));
      }
      return writeStream(res, answerStream(msg.id, msg.params?._meta?.progressToken).events, Math.max(gapMs, 0));
    }, { handshake: 'modern' });
    gw = await startGateway({ upstreams: [{ name: 'm', url: up.url }] });
  });
  after(async () => {
    await gw.close();
    await up.close();
  });

  for (const [label, gap] of [['the stream came whole', 0], ['the stream still coming (40 ms between events)', 40]] as const) {
    test(`tools/call (governed), ${label}: the progress under the request's token, the log message and the one answer reach the client, nothing else`, async () => {
      gapMs = gap;
      const { body, headers } = modernRequest(7, 'tools/call', { name: 'work', arguments: {}, _meta: { progressToken: 'mine' } });
      const res = await post(gw.url, body, headers, AbortSignal.timeout(15_000));
      assert.equal(res.status, 200, res.text);
      const got = messagesOf(res.text) as Array<Record<string, any>>;
      // The governed call's answer carries Gatehouse's run id in _meta; the rest is the upstream's.
      assert.equal(got.length, 3, res.text);
      const expected = answerStream(7, 'mine').belong as Array<Record<string, any>>;
      assert.deepEqual(got.slice(0, 2), expected.slice(0, 2));
      assert.equal(got[2]!.id, 7);
      assert.deepEqual(got[2]!.result.content, [{ type: 'text', text: 'done' }]);
      assert.doesNotMatch(res.text, /password|another caller|escaped-other|list_changed|not-yours|a second answer/);
      assert.match(res.text, /: a comment/, 'comments are framing, and go on');
    });

    test(`prompts/get (not governed), ${label}: the same messages, and nothing else`, async () => {
      gapMs = gap;
      const { body, headers } = modernRequest('p-1', 'prompts/get', { name: 'any', _meta: { progressToken: 3 } });
      const res = await post(gw.url, body, headers, AbortSignal.timeout(15_000));
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(messagesOf(res.text), answerStream('p-1', 3).belong);
    });

    test(`subscriptions/listen, ${label}: the acknowledgment, the change asked for and the listen's own end, nothing request-scoped, no request, no kind not asked for`, async () => {
      gapMs = gap;
      const { body, headers } = modernRequest('l-1', 'subscriptions/listen', { notifications: { toolsListChanged: true } });
      const res = await post(gw.url, body, headers, AbortSignal.timeout(15_000));
      assert.equal(res.status, 200, res.text);
      const got = messagesOf(res.text) as Array<Record<string, any>>;
      assert.deepEqual(got.map((m) => m.method ?? `response ${m.id}`), ['notifications/subscriptions/acknowledged', 'notifications/tools/list_changed', 'response l-1']);
    });
  }

  test('a plain JSON answer is relayed untouched', async () => {
    gapMs = -1;
    const { body, headers } = modernRequest('j-1', 'prompts/get', { name: 'any' });
    const res = await post(gw.url, body, headers, AbortSignal.timeout(15_000));
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.equal(res.text, JSON.stringify({ jsonrpc: '2.0', id: 'j-1', result: { messages: [], resultType: 'complete' } }));
  });
});
