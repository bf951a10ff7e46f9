// The era probe's own exchanges answer a legacy server's ping. A server may ping before it answers
// `initialize` (2025-11-25/basic/lifecycle.mdx §Initialization: "The server SHOULD NOT send requests other
// than pings ... before receiving the initialized notification"), on the stream of its answer
// (basic/transports.mdx §Sending Messages 6), and the receiver MUST respond promptly
// (basic/utilities/ping.mdx §Behavior Requirements; GATEWAY-REQUIREMENTS §5, era detection). The probe read
// past the ping and waited for an answer the server held back until its pong: the probe ran into its
// timeout and misjudged the server (here: "answered neither server/discover nor initialize").

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

type Msg = { id?: string | number; method?: string; result?: unknown };

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/**
 * A legacy server that pings on its answer to the probe's `pingOn` request and answers only once the ping
 * is answered (the pong's session header recorded); unanswered, it ends the stream after 2 s with no answer.
 */
async function pingingLegacy(pingOn: 'initialize' | 'server/discover') {
  const pongs: Array<{ id: unknown; session: unknown }> = [];
  const waiting = new Map<string, () => void>();
  let n = 0;
  const pingThenAnswer = (res: ServerResponse, answer: Record<string, unknown>, headers: Record<string, string>): void => {
    const id = `ping-${++n}`;
    res.writeHead(200, { 'content-type': 'text/event-stream', ...headers });
    res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' })}\n\n`);
    waiting.set(id, () => res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', ...answer })}\n\n`));
    setTimeout(() => {
      if (waiting.delete(id)) res.end();
    }, 2_000).unref();
  };
  const json = (res: ServerResponse, status: number, payload: unknown, headers: Record<string, string> = {}): void => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(payload));
  };
  const up = await startFakeUpstream((req, res, body) => {
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    if (req.method === 'GET') return void res.writeHead(405, { allow: 'POST, DELETE' }).end();
    const msg = JSON.parse(body) as Msg;
    if (msg.method === undefined) {
      if (JSON.stringify(msg.result) === '{}' && typeof msg.id === 'string') {
        pongs.push({ id: msg.id, session: req.headers['mcp-session-id'] });
        const done = waiting.get(msg.id);
        waiting.delete(msg.id);
        done?.();
      }
      return void res.writeHead(202).end();
    }
    if (msg.method === 'server/discover') {
      // A legacy server without the method (basic/index.mdx: -32601).
      const refusal = { id: msg.id, error: { code: -32601, message: 'Method not found' } };
      if (pingOn === 'server/discover') return pingThenAnswer(res, refusal, {});
      return json(res, 400, { jsonrpc: '2.0', ...refusal });
    }
    if (msg.id === undefined) return void res.writeHead(202).end();
    if (msg.method === 'initialize') {
      const answer = { id: msg.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'pinging', version: '1' } } };
      const headers = { 'mcp-session-id': `s-${++n}` };
      if (pingOn === 'initialize' && msg.id === 'gatehouse-probe') return pingThenAnswer(res, answer, headers);
      return json(res, 200, { jsonrpc: '2.0', ...answer }, headers);
    }
    if (msg.method === 'tools/list') return json(res, 200, { jsonrpc: '2.0', id: msg.id, result: { tools: [{ name: 't', inputSchema: { type: 'object' } }] } });
    json(res, 200, { jsonrpc: '2.0', id: msg.id, result: {} });
  }, { handshake: false });
  cleanups.push(() => up.close());
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url }] });
  cleanups.push(() => gw.close());
  return { gw, pongs };
}

test('a ping on the answer to the probe\'s initialize is answered, on the session it names, and the server is found legacy', async () => {
  const { gw, pongs } = await pingingLegacy('initialize');
  const req = modernRequest(1, 'tools/list');
  const res = await post(gw.url, req.body, req.headers);
  assert.equal(res.json().result?.tools?.[0]?.name, 't', res.text);
  assert.equal(pongs.length, 1);
  assert.match(String(pongs[0]!.session), /^s-/, 'the pong names the session the initialize answer opened');
  assert.ok(gw.logs.some((l) => l.msg === 'upstream era detected' && l.era === 'legacy'));
});

test('a ping on the answer to the probe\'s server/discover is answered, and the server is found legacy', async () => {
  const { gw, pongs } = await pingingLegacy('server/discover');
  const req = modernRequest(1, 'tools/list');
  const res = await post(gw.url, req.body, req.headers);
  assert.equal(res.json().result?.tools?.[0]?.name, 't', res.text);
  assert.deepEqual(pongs.map((p) => p.session), [undefined], 'no session yet: the pong names none');
  assert.ok(gw.logs.some((l) => l.msg === 'upstream era detected' && l.era === 'legacy'));
});
