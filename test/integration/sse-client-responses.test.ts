// An HTTP+SSE client's answer to a server request (an elicitation, a roots/list) is a JSON-RPC response
// POSTed to its endpoint (2024-11-05/basic/transports.mdx §HTTP with SSE; 2025-11-25/basic/transports.mdx
// §Sending Messages 2: a POST "MUST be a single JSON-RPC request, notification, or response"). It asks
// nothing, so nothing may come back for it on the stream: JSON-RPC 2.0 §5 has the server answer requests
// only. Ids are per sender (2025-11-25/basic/index.mdx §Requests), so the server's request ids and the
// client's own overlap: an "answer" written with the id of the server's request would reach the client as
// the response to its own request of that id, still in flight.
// server-everything (a real 2025-era server, passed through) asks the client's roots/list once initialized
// (server id 0) and the elicitation next (server id 1), while the client's long-running call is id 1.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { ElicitRequestSchema, ListRootsRequestSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { startGateway } from '../helpers/gateway.js';
import { startEverythingHttp } from '../fixtures/upstreams/everything-http.js';
import { textOf } from '../helpers/v1-everything.js';

test("an SSE client's answer to a server request gets nothing back on the stream, and never fails its own call of the same id", async () => {
  const up = await startEverythingHttp();
  const gw = await startGateway({ listen: { ssePath: '/sse' }, upstreams: [{ name: 'ev', url: up.url, era: 'legacy' }] });
  const client = new Client({ name: 'answers', version: '1' }, { capabilities: { roots: {}, elicitation: {} } });
  try {
    let rootsAsked!: () => void;
    const asked = new Promise<void>((r) => (rootsAsked = r));
    client.setRequestHandler(ListRootsRequestSchema, async () => {
      rootsAsked();
      return { roots: [] };
    });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada', check: true } }) as never);
    const errors: string[] = [];
    client.onerror = (err) => void errors.push(err.message);
    const transport = new SSEClientTransport(new URL('/sse', gw.origin));
    await client.connect(transport, { timeout: 15_000 });
    // What the stream carries and what the client sends, by JSON-RPC id.
    const sent: JSONRPCMessage[] = [];
    const received: JSONRPCMessage[] = [];
    const send = transport.send.bind(transport);
    transport.send = async (m) => {
      sent.push(m);
      return send(m);
    };
    const onmessage = transport.onmessage!;
    transport.onmessage = (m) => {
      received.push(m);
      onmessage(m);
    };
    await asked;
    // Settled either way at once, so that a failure is the assertion's, not an unhandled rejection.
    const long = client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 3, steps: 3 } }, undefined, { timeout: 30_000 }).then(
      (result) => textOf(result),
      (err: Error) => `failed: ${err.message}`,
    );
    const elicited = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} }, undefined, { timeout: 30_000 });
    assert.match(textOf(elicited), /User provided the requested information/);
    // The overlap this test is about: the server's elicitation has the id of the client's call in flight.
    const serverRequest = received.find((m) => 'method' in m && m.method === 'elicitation/create') as { id: unknown } | undefined;
    const longCall = sent.find((m) => 'method' in m && m.method === 'tools/call') as { id: unknown } | undefined;
    assert.equal(serverRequest?.id, longCall?.id, 'precondition: the elicitation and the long call share an id');
    assert.match(await long, /Long running operation completed/);
    // Every response on the stream answers a request the client sent, and the client saw no stray answer.
    const requestIds = new Set(sent.filter((m) => 'method' in m && 'id' in m).map((m) => (m as { id: unknown }).id));
    const stray = received.filter((m) => !('method' in m) && !requestIds.has((m as { id: unknown }).id));
    assert.deepEqual(stray, []);
    assert.deepEqual(errors, []);
  } finally {
    await client.close();
    await gw.close();
    await up.close();
  }
});
