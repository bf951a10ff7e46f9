// A 2026-07-28 stdio server that writes a JSON-RPC request to stdout anyway. The modern protocol has no
// server-to-client requests: "The server MUST NOT write JSON-RPC requests to stdout" (2026-07-28/basic/
// transports/stdio.mdx §Receiving Messages), and a modern client's answer stream carries only notifications
// and the response (streamable-http.mdx §Receiving Messages: "MUST NOT send independent JSON-RPC requests on
// this stream"). Gatehouse refuses such a request to the child (-32601: the client has no such method) and
// never puts it on the client's stream, where a modern client could not answer it and the call would wait.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const SERVER = fileURLToPath(new URL('../fixtures/upstreams/requesting-modern-stdio.mjs', import.meta.url));
const gw = await startGateway({ upstreams: [{ name: 'req', command: [process.execPath, SERVER], timeouts: { requestMs: 5_000 } }] });
after(() => gw.close());

test('a modern stdio child\'s request is refused to the child with -32601 and never reaches the modern client', async () => {
  const call = modernRequest(1, 'tools/call', { name: 'asks', arguments: {}, _meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } } });
  // Bounded: before the fix the call waited forever on an answer a modern client cannot send.
  const res = await post(gw.url, call.body, call.headers, AbortSignal.timeout(8_000));
  assert.equal(res.status, 200, res.text);
  type Message = { id?: unknown; method?: string; result?: { content?: Array<{ text: string }> } };
  const events = res.text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as Message);
  const messages = events.length > 0 ? events : [JSON.parse(res.text) as Message];
  assert.deepEqual(messages.filter((m) => m.method !== undefined), [], 'the child\'s request is not on the client\'s stream');
  const answer = messages.at(-1)!;
  assert.equal(answer.id, 1);
  // The child was told at once, so its call finished (with what it was told) well within its request timeout.
  const told = JSON.parse(answer.result!.content![0]!.text) as { error?: { code: number } };
  assert.equal(told.error?.code, -32601, res.text);
});
