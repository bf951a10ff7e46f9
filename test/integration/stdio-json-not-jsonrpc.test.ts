// A stdio server whose structured logger writes to stdout (pino, structlog, a JSON banner): the lines are
// JSON but no JSON-RPC messages. stdout carries MCP messages only (2025-11-25/basic/transports.mdx §stdio:
// "The server MUST NOT write anything to its stdout that is not a valid MCP message"), and a JSON-RPC message
// has "jsonrpc": "2.0" and a method, or an id and a result or error (basic/index.mdx §Messages). Such a line
// is the server's own log: it is logged for the operator and skipped, as a line that is not JSON is. Until
// 4 December a perSession client was sent it as a message of its call's stream, whatever it held (here an
// API key the server logged). A 2025-03-26 batch on stdout (that revision allows them) is split, its
// messages delivered one by one, and what in it is no message skipped.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';
import { gatewaysCheckedForLeakedChildren } from '../helpers/stdio-children.js';

const FAKE = fileURLToPath(new URL('../fixtures/upstreams/stdio-fake.mjs', import.meta.url));
const gateways = gatewaysCheckedForLeakedChildren();

/** The JSON messages of an SSE body, or the one JSON body. */
function messagesOf(contentType: string, text: string): Array<Record<string, unknown>> {
  if (!contentType.startsWith('text/event-stream')) return [JSON.parse(text) as Record<string, unknown>];
  return text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>);
}

for (const processes of ['perSession', 'shared'] as const) {
  test(`${processes}: JSON lines on stdout that are no JSON-RPC message are logged and skipped, never sent to the client; a batch's messages are delivered`, { timeout: 30_000 }, async () => {
    const gw = await startGateway({ upstreams: [{ name: 'fake', command: [process.execPath, FAKE], era: 'legacy', processes }] });
    gateways.push(gw);
    const init = await post(gw.url, rpc(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
    assert.equal(init.status, 200, init.text);
    const headers = { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']) };
    const res = await post(gw.url, rpc(1, 'tools/call', { name: 'json-log' }), headers);
    assert.equal(res.status, 200, res.text);
    assert.doesNotMatch(res.text, /sk-not-for-clients|an array|"level":30/, 'the server\'s own log line reached the client');
    const messages = messagesOf(String(res.headers['content-type']), res.text);
    for (const m of messages) assert.equal(m.jsonrpc, '2.0', JSON.stringify(m));
    const answer = messages.at(-1)!;
    assert.equal(answer.id, 1);
    assert.match(JSON.stringify(answer.result), /pid \d+/);
    if (processes === 'perSession') {
      // The client's own session: the batch's log notification travels on the call's stream.
      assert.ok(messages.some((m) => m.method === 'notifications/message' && (m.params as { data?: unknown }).data === 'from a batch'), res.text);
    }
    const skipped = gw.logs.filter((l) => l.msg === 'stdio upstream wrote a line that is not a JSON-RPC message; ignored');
    assert.ok(skipped.some((l) => /handling call/.test(String(l.line))), 'the operator sees the skipped log line');
    assert.ok(skipped.some((l) => /an array/.test(String(l.line))));
    assert.ok(skipped.some((l) => l.line === '42'));
  });
}
