// A 2026-07-28 client (v2 SDK) asked for an LLM sample by the reference legacy server, server-everything
// (v1 SDK, 2025-11-25) and by a v1 server that asks regardless, through the modern-client bridge, alone and as a catalog member. The legacy server
// sends sampling/createMessage on the call's stream (2025-11-25/basic/transports.mdx §Sending Messages 6);
// a modern client may only get it inside an InputRequiredResult, answered by a retry with inputResponses
// (2026-07-28/basic/patterns/mrtr.mdx; streamable-http.mdx §Receiving Messages: no server requests on a
// stream), and only when this request declared `sampling` (mrtr.mdx §Server Requirements 6;
// client/sampling.mdx §Capabilities). GATEWAY-REQUIREMENTS §16.1 "MRTR ⇄ server-initiated requests".

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { CreateMessageResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { startEverythingHttp, type EverythingHttp } from '../fixtures/upstreams/everything-http.js';
import { startV1HttpServer } from '../fixtures/upstreams/v1-http-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

let everything: EverythingHttp;
let alone: TestGateway;
let catalog: TestGateway;

before(async () => {
  everything = await startEverythingHttp();
  alone = await startGateway({ upstreams: [{ name: 'everything', url: everything.url }] });
  catalog = await startGateway({ upstreams: [{ name: 'everything', url: everything.url }, { name: 'again', url: everything.url }] });
});

after(async () => {
  await alone?.close();
  await catalog?.close();
  await everything?.close();
});

for (const [label, gw, tool] of [['one legacy upstream', () => alone, 'trigger-sampling-request'], ['a catalog member', () => catalog, 'everything_trigger-sampling-request']] as const) {
  test(`${label}: the server's sampling request reaches the v2 client, and its answer reaches the server`, { timeout: 30_000 }, async () => {
    const client = new Client({ name: 'bridge-sampling', version: '1.0.0' }, { capabilities: { sampling: {} }, versionNegotiation: { mode: { pin: '2026-07-28' } } });
    const asked: Array<Record<string, any>> = [];
    client.setRequestHandler('sampling/createMessage', async (req) => {
      asked.push(req.params as Record<string, any>);
      return { role: 'assistant', content: { type: 'text', text: 'a sampled reply' }, model: 'test-model', stopReason: 'endTurn' } as never;
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(gw().url)), { timeout: 10_000 });
    try {
      const result = (await client.callTool({ name: tool, arguments: { prompt: 'say hi', maxTokens: 5 } }, { timeout: 20_000 })) as { content: Array<{ text?: string }> };
      assert.equal(asked.length, 1, 'the client was asked once');
      assert.match(JSON.stringify(asked[0]!.messages), /say hi/);
      assert.equal(asked[0]!.maxTokens, 5);
      const text = result.content.map((c) => c.text ?? '').join('\n');
      assert.match(text, /a sampled reply/, `the server got the client's sample: ${text}`);
      assert.match(text, /test-model/);
    } finally {
      await client.close();
    }
  });
}

test('mrtr.mdx §Server Requirements 6: a request that declared elicitation but not sampling is never handed a sampling request; the server hears a refusal', { timeout: 30_000 }, async () => {
  // A v1 server whose tool asks for a sample whatever its client declared (its SDK checks nothing).
  const up = await startV1HttpServer((server) => {
    server.registerTool('sample', { description: 'Asks for a sample' }, async (extra) => {
      try {
        const sample = await extra.sendRequest({ method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 5 } }, CreateMessageResultSchema);
        return { content: [{ type: 'text', text: `sampled: ${JSON.stringify(sample)}` }] };
      } catch (err) {
        return { content: [{ type: 'text', text: `refused: ${(err as Error).message}` }], isError: true };
      }
    });
  });
  const gw = await startGateway({ upstreams: [{ name: 'asker', url: up.url, era: 'legacy' }] });
  try {
    const req = modernRequest(1, 'tools/call', { name: 'sample', arguments: {}, _meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } } });
    const res = await post(gw.url, req.body, req.headers);
    assert.equal(res.status, 200, res.text);
    const result = res.json().result;
    assert.equal(result.resultType, 'complete', `no InputRequiredResult: ${res.text}`);
    assert.equal(result.inputRequests, undefined);
    assert.match(result.content[0].text, /^refused: .*sampling\/createMessage/, 'the server was told the client cannot sample');
  } finally {
    await gw.close();
    await up.close();
  }
});
