// The client capabilities the modern-client bridge declares to a legacy server at `initialize`
// (GATEWAY-REQUIREMENTS §16.1: a modern client in front of a legacy server, handshake synthesis). A capability
// tells the server what it may ask of the client (2025-11-25 basic/lifecycle.mdx §Capability Negotiation), so
// the bridge may declare only what it can carry back to its client: sampling, elicitation and roots, as
// InputRequiredResults (2026-07-28 mrtr.mdx). It declared whatever the client sent, less `extensions`:
// - `tasks` (2025-11-25 basic/utilities/tasks.mdx §Capabilities: the client accepts task-augmented
//   sampling/elicitation requests, and serves tasks/get, tasks/list, tasks/cancel), though the bridge refuses
//   every core task (protocol/core-tasks.ts) and carries no server-to-client tasks/* at all;
// - `experimental`, whose requests the bridge refuses (-32601) as any it does not know;
// - `roots.listChanged`, a promise of notifications/roots/list_changed that a modern client cannot keep (2026-07-28
//   has no such notification) and the bridge never sends.
// A server that believed them would offer task-augmented requests, experimental requests, or trust a roots list
// never said to change, all of which the bridge then fails. Only what it carries is declared now.
// Real upstreams: the v1 SDK's task server (test/fixtures/upstreams/task-tools.ts), which declares tasks itself
// and whose `client_capabilities` tool answers what its client declared; over HTTP and over stdio (`shared`,
// where legacy clients are bridged onto the modern face of the child's sessions too).

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { TASK_STDIO, type TaskHttpServer, taskHttpUpstream } from '../fixtures/upstreams/task-tools.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { gatewaysCheckedForLeakedChildren } from '../helpers/stdio-children.js';

const TIMEOUT_MS = 15_000;

const servers: TaskHttpServer[] = [];
const gateways = gatewaysCheckedForLeakedChildren(10_000, { alsoClose: servers });

/** Everything a client may declare, of which the bridge carries sampling, elicitation and roots (without listChanged). */
const DECLARED = {
  sampling: { tools: {} },
  elicitation: { form: {}, url: {} },
  roots: { listChanged: true },
  tasks: { list: {}, cancel: {}, requests: { sampling: { createMessage: {} }, elicitation: { create: {} } } },
  experimental: { 'x-feature': {} },
};
const CARRIED = { sampling: { tools: {} }, elicitation: { form: {}, url: {} }, roots: {} };

const UPSTREAMS = {
  'a legacy HTTP server': () => taskHttpUpstream(servers),
  'a legacy stdio server in processes: shared': async () => ({ name: 'tasks', command: [process.execPath, TASK_STDIO], processes: 'shared' }),
} as const;

async function gateway(which: keyof typeof UPSTREAMS): Promise<TestGateway> {
  const gw = await startGateway({ upstreams: [await UPSTREAMS[which]()] });
  gateways.push(gw);
  return gw;
}

/** What the upstream's client (the bridge's session) declared, as its `client_capabilities` tool tells. */
function declaredIn(text: string): Record<string, unknown> {
  const data = text
    .split('\n')
    .filter((l) => l.startsWith('data:'))
    .map((l) => l.slice(5).trim());
  const body = JSON.parse(text.trim().startsWith('{') ? text : data.find((d) => d.includes('"result"'))!) as { result?: { content?: Array<{ text: string }> } };
  const reported = body.result?.content?.[0]?.text;
  assert.ok(reported, `no capabilities reported: ${text}`);
  return JSON.parse(reported) as Record<string, unknown>;
}

for (const which of Object.keys(UPSTREAMS) as Array<keyof typeof UPSTREAMS>) {
  describe(`the capabilities the modern-client bridge declares to ${which}`, () => {
    test('a modern client’s tasks, experimental and roots.listChanged are not declared upstream; sampling, elicitation and roots are', async () => {
      const gw = await gateway(which);
      const { body, headers } = modernRequest(1, 'tools/call', { name: 'client_capabilities', arguments: {}, _meta: { 'io.modelcontextprotocol/clientCapabilities': DECLARED } });
      const res = await post(gw.url, body, headers);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(declaredIn(res.text), CARRIED);
    });
  });
}

test('a legacy client bridged onto a stdio server in processes: shared: its tasks and experimental are not declared to the child either', async () => {
  const gw = await gateway('a legacy stdio server in processes: shared');
  const client = new Client({ name: 'caps-test', version: '1.0.0' }, { capabilities: DECLARED });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)), { timeout: TIMEOUT_MS });
  try {
    const result = await client.callTool({ name: 'client_capabilities', arguments: {} }, undefined, { timeout: TIMEOUT_MS });
    const text = (result.content as Array<{ text: string }>)[0]!.text;
    assert.deepEqual(JSON.parse(text), CARRIED);
  } finally {
    await client.close();
  }
});
