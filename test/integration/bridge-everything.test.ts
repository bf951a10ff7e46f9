// A 2026-07-28 client (v2 SDK, pinned modern) in front of the reference legacy server, server-everything
// (v1 SDK, 2025-11-25), through the modern-client bridge: what the bridge offers the client must be
// something it can carry (GATEWAY-REQUIREMENTS §16.1).
//
// Spec references: L = shared/spec/docs/specification/2025-11-25/, M = …/2026-07-28/.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { startEverythingHttp, type EverythingHttp } from '../fixtures/upstreams/everything-http.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

let everything: EverythingHttp;
let gw: TestGateway;

before(async () => {
  everything = await startEverythingHttp();
  gw = await startGateway({ upstreams: [{ name: 'everything', url: everything.url }] });
});

after(async () => {
  await gw?.close();
  await everything?.close();
});

async function modernClient(capabilities: Record<string, unknown> = {}): Promise<V2Client> {
  const client = new V2Client({ name: 'bridge-everything', version: '1.0.0' }, { capabilities, versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new V2Transport(new URL(gw.url)), { timeout: 10_000 });
  return client;
}

describe('modern client → legacy server: tools that need 2025-11-25 tasks', () => {
  // L basic/utilities/tasks.mdx §Tool-Level Negotiation: a tool whose execution.taskSupport is "required"
  // MUST be invoked as a task, and the server MUST answer -32601 to a plain call. Core tasks are not bridged
  // (GATEWAY-REQUIREMENTS §16.1 "Impossible / lossy"), so Gatehouse, the legacy client here, cannot call it.
  test('a tool whose taskSupport is "required" is not offered; the others come without the legacy execution field', { timeout: 30_000 }, async () => {
    const client = await modernClient();
    try {
      const { tools } = await client.listTools(undefined, { timeout: 10_000, cacheMode: 'bypass' });
      const names = tools.map((t) => t.name);
      assert.ok(names.includes('echo'), `the callable tools are listed: ${names.join(', ')}`);
      assert.equal(names.includes('simulate-research-query'), false, 'server-everything declares simulate-research-query taskSupport: required');
      // M schema.json Tool has no `execution`: its one setting is about the legacy task machinery.
      for (const tool of tools) assert.equal('execution' in tool, false, `${tool.name} carries no execution field`);
    } finally {
      await client.close();
    }
  });

  test('calling it anyway is answered as an unknown tool (-32602), never a -32601 tool error the client cannot act on', { timeout: 30_000 }, async () => {
    const call = modernRequest(7, 'tools/call', { name: 'simulate-research-query', arguments: { topic: 'x' } });
    const res = await post(gw.url, call.body, call.headers);
    const body = res.json();
    // M server/tools.mdx §Error Handling: an unknown tool is a JSON-RPC error, -32602.
    assert.equal(body.error?.code, -32602, JSON.stringify(body));
  });
});

describe('modern client → legacy server: a server request that names no call', () => {
  // server-everything asks for roots with server.listRoots(), which names no request: a v1 server sends it on
  // the session's GET stream (L basic/transports.mdx §Listening for Messages), the only place it can go.
  // Gatehouse declared roots for the session (the modern request did) and the tool waits for the answer: with
  // no GET stream open, the question went nowhere and the call hung until the client gave up. One call in
  // flight on the session is the call the question is for (as on stdio): it reaches the modern client as the
  // call's InputRequiredResult (M basic/patterns/mrtr.mdx), and its answer goes back upstream.
  test('get-roots-list: roots/list sent on the GET stream during the call reaches the client and the tool returns its roots', { timeout: 30_000 }, async () => {
    const client = await modernClient({ roots: {} });
    const asked: unknown[] = [];
    client.setRequestHandler('roots/list', async (req) => {
      asked.push(req.params);
      return { roots: [{ uri: 'file:///tmp/bridge-root', name: 'bridge-root' }] } as never;
    });
    try {
      const result = (await client.callTool({ name: 'get-roots-list', arguments: {} }, { timeout: 10_000 })) as { content: Array<{ type: string; text?: string }> };
      const text = result.content.map((c) => c.text ?? '').join('\n');
      assert.ok(asked.length >= 1, 'the client was asked for its roots');
      assert.match(text, /file:\/\/\/tmp\/bridge-root/, text);
    } finally {
      await client.close();
    }
  });
});
