// An upstream's SSE answer whose last blank line, a CRLF, is cut between its CR and its LF (the LF comes
// in the next TCP chunk), relayed to the client as it came. Gatehouse's parser ends the event at the CR
// (WHATWG HTML §9.2.5: a CR alone is a line end), and the LF that follows belongs to no event. Until
// 4 December that LF was held as the start of the next event, and a stream that then ended never passed it
// on: the client got its answer's bytes ending in a lone CR, and a parser that waits after a CR for a
// possible LF (eventsource-parser, in the v1 SDK) never dispatched the answer. The LF now goes on at once.
//
// The client is the real v1 SDK; the upstream a fake, which must cut its bytes at that point.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SseParser } from '../../src/protocol/sse.js';
import { jsonEchoServer, sleep, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { connectV1, textOf } from '../helpers/v1-everything.js';
import { modernRequest, post } from '../helpers/http.js';

test('the parser passes on the LF of a CRLF cut after its CR, as bytes of their own, holding nothing back', () => {
  const p = new SseParser();
  assert.deepEqual(p.push('event: message\r\ndata: {"a":1}\r\n\r').map((e) => e.data), ['{"a":1}']);
  assert.deepEqual(p.push('\n'), [{ raw: '\n' }]);
  assert.equal(p.remainder, '');
  // A CR that a blank line follows is no such cut: the next event starts with its own text.
  assert.deepEqual(p.push('data: 2\r\r').map((e) => e.data), ['2']);
  assert.deepEqual(p.push('data: 3\r\r').map((e) => [e.raw, e.data]), [['data: 3\r\r', '3']]);
});

for (const audited of [false, true]) {
  test(`a relayed answer whose final CRLF is cut between CR and LF reaches the v1 SDK client (audit ${audited ? 'on' : 'off'})`, { timeout: 30_000 }, async () => {
    const up = await startFakeUpstream(async (req, res, body) => {
      const msg = req.method === 'POST' ? (JSON.parse(body) as { id?: unknown; method?: string }) : undefined;
      if (msg?.method !== 'tools/call') return jsonEchoServer(req, res, body);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`event: message\r\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'split answer' }] } })}\r\n\r`);
      await sleep(100);
      res.end('\n');
    });
    const gw = await startGateway({ audit: { enabled: audited }, upstreams: [{ name: 'up', url: up.url, era: 'legacy' }] });
    const { client } = await connectV1(gw.url, { name: 'crlf-split', timeoutMs: 10_000 });
    try {
      const got = await client.callTool({ name: 'echo', arguments: {} }, undefined, { timeout: 5_000 }).then(
        (r) => textOf(r),
        (err: Error) => `error: ${err.message}`,
      );
      assert.equal(got, 'split answer');
    } finally {
      await client.close().catch(() => {});
      await gw.close();
      await up.close();
    }
  });
}

// The modern pass-through relays a streamed answer up to its response and no further (streamable-http.mdx
// §Receiving Messages: the response ends what the request is owed). Stopping there, the LF cut after the
// response's CR would never come: the relay writes it itself, so the bytes end in a whole blank line.
test('a modern answer relayed up to its response ends in a whole line when its final CRLF was cut after the CR', { timeout: 30_000 }, async () => {
  const up = await startFakeUpstream(
    async (_req, res, body) => {
      const msg = JSON.parse(body) as { id?: unknown; method?: string };
      if (msg.method !== 'tools/call') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { tools: [{ name: 'echo', inputSchema: { type: 'object' } }], resultType: 'complete' } }));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // Past the pass-through's settle time, so the answer is relayed as a stream.
      await sleep(50);
      res.write(`event: message\r\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'split answer' }], resultType: 'complete' } })}\r\n\r`);
      await sleep(100);
      res.end('\n');
    },
    { handshake: 'modern' },
  );
  const gw = await startGateway({ audit: { enabled: false }, upstreams: [{ name: 'up', url: up.url, era: 'modern' }] });
  try {
    const m = modernRequest(1, 'tools/call', { name: 'echo', arguments: {} });
    const res = await post(gw.url, m.body, m.headers);
    assert.equal(res.status, 200, res.text);
    assert.match(res.text, /split answer/);
    assert.ok(res.text.endsWith('\r\n\r\n') || res.text.endsWith('\n\n'), JSON.stringify(res.text.slice(-12)));
  } finally {
    await gw.close();
    await up.close();
  }
});
