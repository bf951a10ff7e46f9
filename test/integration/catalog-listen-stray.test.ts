// What a member's listen stream passes to a client's subscriptions/listen through the catalog (several
// upstreams). 2026-07-28/basic/patterns/subscriptions.mdx §Opening a Stream: "The server MUST NOT send
// notification types the client has not explicitly requested"; streamable-http.mdx §Receiving Messages:
// no independent requests on a stream, and "request-scoped notifications like notifications/progress and
// notifications/message are not delivered on the listen stream". Until 5 December the fan-out relayed a
// member's every message that had a method: a member's server request went on as a notification (its id
// dropped), progress and log messages went on, and so did list changes of kinds the client never asked
// for, and resource updates when it had subscribed to none. Now only the kinds the client asked for go on.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { modernRequest, post } from '../helpers/http.js';
import { answerModernJson, twoMemberCatalog } from '../helpers/modern-member.js';
import { messagesInSse, sseMessage as sse } from '../helpers/sse-messages.js';

/** A modern member whose listen acknowledges what it was asked, then sends `extra` and ends after 300 ms. */
async function member(extra: (meta: Record<string, unknown>) => unknown[]): Promise<FakeUpstream> {
  return startFakeUpstream(async (_req, res, body) => {
    const msg = JSON.parse(body) as { id: unknown; method: string; params?: { notifications?: Record<string, unknown> } };
    if (msg.method === 'subscriptions/listen') {
      const meta = { 'io.modelcontextprotocol/subscriptionId': msg.id };
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sse({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: msg.params?.notifications ?? {}, _meta: meta } }));
      for (const m of extra(meta)) res.write(sse(m));
      await new Promise((r) => setTimeout(r, 300));
      return void res.end(sse({ jsonrpc: '2.0', id: msg.id, result: { resultType: 'complete', _meta: meta } }));
    }
    answerModernJson(res, msg);
  }, { handshake: 'modern', capabilities: { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true, subscribe: true } } });
}

const catalog = twoMemberCatalog(
  () =>
    member((meta) => [
      { jsonrpc: '2.0', id: 'srv-1', method: 'sampling/createMessage', params: { messages: [], maxTokens: 10, _meta: meta } },
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'x', progress: 1, _meta: meta } },
      { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'not on a listen', _meta: meta } },
      { jsonrpc: '2.0', method: 'notifications/prompts/list_changed', params: { _meta: meta } },
      { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'file:///never-subscribed', _meta: meta } },
      { jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: meta } },
    ]),
  () => member(() => []),
);

test('a listen for toolsListChanged gets the acknowledgment, the tools list change and its end: no request, no progress or log message, no unrequested kind', async () => {
  const { body, headers } = modernRequest('l-1', 'subscriptions/listen', { notifications: { toolsListChanged: true } });
  const res = await post(catalog.gw.url, body, headers, AbortSignal.timeout(15_000));
  assert.equal(res.status, 200, res.text);
  const messages = messagesInSse(res.text);
  assert.deepEqual(messages.map((m) => m.method ?? `response ${m.id}`), ['notifications/subscriptions/acknowledged', 'notifications/tools/list_changed', 'response l-1'], res.text);
  assert.deepEqual(messages[0]!.params.notifications, { toolsListChanged: true });
  assert.equal(messages[1]!.params._meta['io.modelcontextprotocol/subscriptionId'], 'l-1');
});
