// The notifications a member puts on a modern call's answer stream, through the catalog (several
// upstreams). 2026-07-28/basic/transports/streamable-http.mdx §Receiving Messages: the notifications on
// the SSE answer to a request "MUST relate to the originating client request"; change notifications travel
// on a subscriptions/listen stream only; basic/patterns/progress.mdx: progress MUST only reference the
// request's own token. The catalog already left a member's requests and foreign responses out of a call's
// stream, but passed every notification on until 5 December: a member's list_changed and its progress for
// other requests (perhaps other clients') reached the caller. The rule is now the pass-through's
// (upstream/modern-answer-stream.ts).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { modernRequest, post } from '../helpers/http.js';
import { answerModernJson, twoMemberCatalog } from '../helpers/modern-member.js';
import { messagesInSse, sseMessage as sse } from '../helpers/sse-messages.js';

/** A modern member with one tool, `work`, whose answer stream carries notifications of every kind before the response. */
const member = (): Promise<FakeUpstream> =>
  startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id: unknown; method: string; params?: { _meta?: { progressToken?: unknown } } };
    if (msg.method === 'tools/call') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      return void res.end(
        [
          sse({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }),
          sse({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'not-yours', progress: 5 } }),
          sse({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: msg.params?._meta?.progressToken, progress: 1 } }),
          sse({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } }),
          sse({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'done' }], resultType: 'complete' } }),
        ].join(''),
      );
    }
    answerModernJson(res, msg, [{ name: 'work', inputSchema: { type: 'object' } }]);
  }, { handshake: 'modern' });

const catalog = twoMemberCatalog(member, member);

test('a modern client\'s call through the catalog gets its own progress, the log message and the answer; not the member\'s list_changed or another token\'s progress', async () => {
  const { body, headers } = modernRequest(9, 'tools/call', { name: 'a_work', arguments: {}, _meta: { progressToken: 'mine' } });
  const res = await post(catalog.gw.url, body, headers, AbortSignal.timeout(15_000));
  assert.equal(res.status, 200, res.text);
  const messages = messagesInSse(res.text);
  assert.deepEqual(messages.map((m) => m.method ?? `response ${m.id}`), ['notifications/progress', 'notifications/message', 'response 9'], res.text);
  assert.equal(messages[0]!.params.progressToken, 'mine');
  assert.deepEqual(messages[2]!.result.content, [{ type: 'text', text: 'done' }]);
});
