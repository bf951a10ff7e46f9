// A modern client's call to a legacy server waits ("parked") while the server's question is with the client
// (2026-07-28 mrtr.mdx: the call answers input_required, and the client retries with its answer). Meanwhile
// Gatehouse keeps reading the server's answer stream for that call, and held every message it sent, unread,
// without a bound, for up to sessions.inputTimeoutMs (5 min by default): a chatty or hostile server grew
// the gateway's memory by as much as it cared to send. Now a waiting call holds a bounded number of
// notifications (the rest are dropped, which progress and log messages may be, and logged once) and a
// bounded number of other messages (past it the call fails: no server asks that many questions at once).

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { waitUntil } from '../helpers/stdio-children.js';

const FLOOD = 5_000;
type Msg = { id?: string | number; method?: string; params?: Record<string, unknown>; result?: { content?: { name?: string } } };

const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

interface FloodingUpstream extends FakeUpstream {
  /** tools/call answer streams the gateway closed before the server ended them (it let go of the call). */
  callsLetGo(): number;
}

/** A 2025-11-25 server whose tools/call asks a question, then writes `flood` before it waits for the answer. */
async function floodingUpstream(flood: (callId: unknown) => string[]): Promise<FloodingUpstream> {
  let waiting: ServerResponse | undefined;
  let callId: unknown;
  let letGo = 0;
  const up = await startFakeUpstream(
    (req, res, body) => {
      if (req.method === 'DELETE') return void res.writeHead(200).end();
      if (req.method === 'GET') return void res.writeHead(405, { allow: 'POST, DELETE' }).end();
      const msg = JSON.parse(body) as Msg;
      const json = (result: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
      if (msg.method === 'initialize') {
        res.setHeader('mcp-session-id', 'flood');
        return void json({ protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'flood', version: '1' } });
      }
      if (msg.method === 'server/discover') return void res.writeHead(400, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request"}}');
      if (msg.method === 'tools/list') return void json({ tools: [{ name: 'greet', inputSchema: { type: 'object' } }] });
      if (msg.method === 'tools/call') {
        callId = msg.id;
        waiting = res;
        res.on('close', () => void (res.writableFinished || letGo++));
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: 'ask-name', method: 'elicitation/create', params: { message: 'name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } } })}\n\n`);
        // After the question has reached the client, and the call waits for its answer.
        setTimeout(() => res.write(flood(callId).map((m) => `data: ${m}\n\n`).join('')), 300);
        return;
      }
      if (msg.id === 'ask-name' && msg.result !== undefined) {
        res.writeHead(202).end();
        waiting?.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: callId, result: { content: [{ type: 'text', text: `hello ${msg.result.content?.name}` }] } })}\n\n`);
        return;
      }
      res.writeHead(202).end();
    },
    { handshake: false },
  );
  cleanups.push(() => up.close());
  return Object.assign(up, { callsLetGo: () => letGo });
}

async function gatewayFor(up: FakeUpstream): Promise<TestGateway> {
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url }] });
  cleanups.push(() => gw.close());
  return gw;
}

const caps = { 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } } };
async function call(gw: TestGateway, id: number, extra: Record<string, unknown> = {}) {
  const req = modernRequest(id, 'tools/call', { name: 'greet', arguments: {}, _meta: caps, ...extra });
  return (await post(gw.url, req.body, req.headers)).json() as { result?: Record<string, any>; error?: { code: number; message: string; data?: Record<string, unknown> } };
}

test(`a waiting call holds a bounded number of the server's notifications: ${FLOOD} log messages are mostly dropped, logged once, and the call still ends with its answer`, async () => {
  const up = await floodingUpstream(() => Array.from({ length: FLOOD }, (_, i) => JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: `line ${i}` } })));
  const gw = await gatewayFor(up);
  const asked = (await call(gw, 1)).result!;
  assert.equal(asked.resultType, 'input_required', JSON.stringify(asked));
  const droppedWarnings = () => gw.logs.filter((l) => typeof l.msg === 'string' && l.msg.includes('notifications') && l.msg.includes('dropped'));
  // The flood is read while the call waits: its first drop is waited for (bounded), not slept on.
  assert.ok(await waitUntil(() => droppedWarnings().length > 0, 10_000), `a warning: ${JSON.stringify(gw.logs.map((l) => l.msg))}`);
  const [key] = Object.keys(asked.inputRequests);
  const done = (await call(gw, 2, { requestState: asked.requestState, inputResponses: { [key!]: { action: 'accept', content: { name: 'Ada' } } } })).result!;
  assert.equal(done.content[0].text, 'hello Ada', JSON.stringify(done));
  // The answer came after the whole flood on the same stream: every drop had happened by then, told once.
  const dropped = droppedWarnings();
  assert.equal(dropped.length, 1, `one warning: ${JSON.stringify(gw.logs.map((l) => l.msg))}`);
  assert.equal(dropped[0]!.upstream, 'up');
});

test('a waiting call that the server sends request after request fails, rather than holding them all', async () => {
  const up = await floodingUpstream(() => Array.from({ length: FLOOD }, (_, i) => JSON.stringify({ jsonrpc: '2.0', id: `extra-${i}`, method: 'elicitation/create', params: { message: `again ${i}?`, requestedSchema: { type: 'object', properties: {} } } })));
  const gw = await gatewayFor(up);
  const asked = (await call(gw, 1)).result!;
  assert.equal(asked.resultType, 'input_required', JSON.stringify(asked));
  // Past the bound the call fails and the gateway lets go of its answer stream, which the server sees
  // closed: waited for (bounded), not slept on, so that the retry finds the call already failed.
  assert.ok(await waitUntil(() => up.callsLetGo() === 1, 10_000), 'the gateway let go of the flooded call\'s answer stream');
  const [key] = Object.keys(asked.inputRequests);
  const retried = await call(gw, 2, { requestState: asked.requestState, inputResponses: { [key!]: { action: 'accept', content: { name: 'Ada' } } } });
  assert.equal(retried.result?.content?.[0]?.text, undefined, JSON.stringify(retried).slice(0, 500));
  const failure = JSON.stringify(retried);
  assert.match(failure, /GW_ERR_UPSTREAM_BAD_RESPONSE/);
  assert.match(failure, /while the call waited/);
});
