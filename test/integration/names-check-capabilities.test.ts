// One upstream served by byte pass-through only while nothing about it needs rewriting or hiding: the
// names check (src/catalog/single-upstream.ts) lists the upstream as the gateway to decide. A legacy server
// may offer tools only to clients that declared a capability (server-everything registers
// `trigger-elicitation-request` only for clients declaring elicitation), so what the gateway sees with no
// capabilities is not what every client is shown.
// Spec: 2025-11-25/basic/lifecycle.mdx §Capability Negotiation; GATEWAY-REQUIREMENTS §Tool Names.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const EVERYTHING = { name: 'everything', command: [process.execPath, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'] };

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function toolNames(gw: TestGateway, capabilities: Record<string, unknown>, id: number): Promise<string[]> {
  const req = modernRequest(id, 'tools/list', { _meta: { 'io.modelcontextprotocol/clientCapabilities': capabilities } });
  const res = await post(gw.url, req.body, req.headers);
  assert.equal(res.status, 200, res.text);
  return (res.json().result.tools as Array<{ name: string }>).map((t) => t.name);
}

test('a tool the rules hide from everyone, offered only to clients declaring elicitation, is not listed to them', async () => {
  const gw = await startGateway({
    upstreams: [EVERYTHING],
    policy: { rules: [{ access: 'deny', tools: ['everything/trigger-elicitation-request'] }, { access: 'allow', tools: ['everything/*'] }] },
  });
  cleanups.push(() => gw.close());
  const plain = await toolNames(gw, {}, 1);
  assert.ok(plain.includes('echo'), plain.join());
  const eliciting = await toolNames(gw, { elicitation: {} }, 2);
  assert.ok(eliciting.includes('trigger-url-elicitation') || eliciting.includes('echo'), eliciting.join());
  assert.ok(!eliciting.includes('trigger-elicitation-request'), `a hidden tool was listed: ${eliciting.join()}`);
  const call = modernRequest(3, 'tools/call', { name: 'trigger-elicitation-request', arguments: {}, _meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } } });
  assert.equal((await post(gw.url, call.body, call.headers)).json().error?.code, -32602, 'and it cannot be called');

  // A legacy client (v1 SDK) that declared elicitation at initialize: its session's lists are checked with it.
  await elicitingLegacyClientSeesNoHiddenTool(gw);
});

test('the same for a legacy client that is the first to list: its own capabilities decide, not the gateway\'s', async () => {
  const gw = await startGateway({
    upstreams: [EVERYTHING],
    policy: { rules: [{ access: 'deny', tools: ['everything/trigger-elicitation-request'] }, { access: 'allow', tools: ['everything/*'] }] },
  });
  cleanups.push(() => gw.close());
  await elicitingLegacyClientSeesNoHiddenTool(gw);
});

/** A legacy client (v1 SDK) that declared elicitation at initialize lists tools: the hidden one is not among them. */
async function elicitingLegacyClientSeesNoHiddenTool(gw: { url: string }): Promise<void> {
  const client = new Client({ name: 'eliciting-legacy', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
  try {
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'echo'));
    assert.ok(!tools.some((t) => t.name === 'trigger-elicitation-request'), `a hidden tool was listed: ${tools.map((t) => t.name).join()}`);
  } finally {
    await client.close();
  }
}
