// A modern upstream's SSE answer on the pass-through that stays open after its response. 2026-07-28
// basic/transports/streamable-http.mdx §Receiving Messages: "The final JSON-RPC response SHOULD terminate
// the stream"; nothing may follow it that the client could use (upstream/modern-answer-stream.ts leaves it
// out). Until 5 December the client's answer stayed open for as long as the upstream kept its stream open
// (up to its body timeout, five minutes by default), so a client that reads to the end of the answer, as
// curl and plain HTTP clients do, waited that long after its answer had come, and the upstream connection
// stayed taken. The relay now ends at the response, and lets the upstream's stream go.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { assertEndedAtResponse, HeldAnswers, postHeld } from '../helpers/held-answer.js';
import { modernRequest } from '../helpers/http.js';
import { messagesInSse, sseMessage as sse } from '../helpers/sse-messages.js';

let up: FakeUpstream;
let gw: TestGateway;
const held = new HeldAnswers();
before(async () => {
  up = await startFakeUpstream(async (_req, res, body) => {
    const msg = JSON.parse(body) as { id: unknown; method: string };
    if (msg.method === 'tools/list') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { tools: [{ name: 'work', inputSchema: { type: 'object' } }], resultType: 'complete', ttlMs: 0 } }));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(sse({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } }));
    await new Promise((r) => setTimeout(r, 50));
    res.write(sse({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'done' }], resultType: 'complete' } }));
    // The stream stays open long after the response.
    await held.hold(res);
  }, { handshake: 'modern' });
  gw = await startGateway({ upstreams: [{ name: 'm', url: up.url }] });
});
after(async () => {
  await gw.close();
  await up.close();
});

for (const method of ['tools/call', 'prompts/get'] as const) {
  test(`${method}: the client's answer ends with the response, not when the upstream's stream does`, async () => {
    const params = method === 'tools/call' ? { name: 'work', arguments: {} } : { name: 'any' };
    const { body, headers } = modernRequest(`${method}-1`, method, params);
    const before = held.counts();
    const res = await postHeld(gw.url, body, headers);
    const messages = messagesInSse(res.text);
    assert.equal(messages.at(-1)?.id, `${method}-1`, res.text);
    await assertEndedAtResponse(held, before);
  });
}
