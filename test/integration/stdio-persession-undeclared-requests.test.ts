// A perSession stdio server that asks its client for what the client did not declare (an elicitation from
// a client without `elicitation`). Capabilities are negotiated at initialize, and a server may ask only for
// what its client declared (2025-11-25/client/elicitation.mdx §Capabilities: "Clients that support
// elicitation MUST declare the elicitation capability"; sampling.mdx and roots.mdx alike). Gatehouse holds
// what the client declared, and answers such a request for it as the bridges of `shared` and `single` do: an
// elicitation is cancelled, anything else is -32601. Until 4 December it went to the client, whose call then
// waited, its clock stopped, on an answer a client without the capability need not give.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';
import { readSseUntil } from '../helpers/sse.js';
import { gatewaysCheckedForLeakedChildren } from '../helpers/stdio-children.js';

const ASKER = fileURLToPath(new URL('../fixtures/upstreams/asker-stdio.mjs', import.meta.url));
const gateways = gatewaysCheckedForLeakedChildren();

async function session(url: string, capabilities: Record<string, unknown>): Promise<Record<string, string>> {
  const init = await post(url, rpc(0, 'initialize', { protocolVersion: '2025-06-18', capabilities, clientInfo: { name: 't', version: '1' } }));
  assert.equal(init.status, 200, init.text);
  return { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']) };
}

test('perSession: an elicitation for a client that declared none is cancelled by Gatehouse, never sent to the client', { timeout: 30_000 }, async () => {
  const gw = await startGateway({ upstreams: [{ name: 'asker', command: [process.execPath, ASKER], era: 'legacy', processes: 'perSession' }] });
  gateways.push(gw);
  const headers = await session(gw.url, {});
  const res = await post(gw.url, rpc(1, 'tools/call', { name: 'ask' }), headers, AbortSignal.timeout(10_000));
  assert.equal(res.status, 200, res.text);
  assert.doesNotMatch(res.text, /elicitation\/create/, 'the question reached a client that cannot answer it');
  assert.match(res.text, /user said \{\\"action\\":\\"cancel\\"\}/);
  assert.ok(gw.logs.some((l) => /did not declare/.test(String(l.msg)) && l.method === 'elicitation/create'));
});

test('perSession: a client that declared elicitation is still asked', { timeout: 30_000 }, async () => {
  const gw = await startGateway({ upstreams: [{ name: 'asker', command: [process.execPath, ASKER], era: 'legacy', processes: 'perSession' }] });
  gateways.push(gw);
  const headers = await session(gw.url, { elicitation: {} });
  const call = await request(gw.url, { method: 'POST', headers, body: rpc(1, 'tools/call', { name: 'ask' }), signal: AbortSignal.timeout(10_000) });
  assert.equal(call.statusCode, 200);
  // The question comes on the call's stream; the test answers it on a POST of its own once it is there.
  const asked = await readSseUntil(call.body, (m) => m.some((x) => x.method === 'elicitation/create'));
  const question = asked.find((x) => x.method === 'elicitation/create');
  assert.ok(question !== undefined, `no question on the call's stream: ${JSON.stringify(asked)}`);
  const answer = await post(gw.url, JSON.stringify({ jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { ok: true } } }), headers);
  assert.equal(answer.status, 202, answer.text);
  const rest = await readSseUntil(call.body, (m) => m.some((x) => x.id === 1));
  const result = rest.find((x) => x.id === 1);
  assert.match(String(result?.result?.content?.[0]?.text), /user said \{"action":"accept"/, JSON.stringify(rest));
});
