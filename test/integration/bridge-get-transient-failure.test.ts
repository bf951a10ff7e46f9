// A modern subscriptions/listen in front of a legacy upstream is fed by the session's GET stream (GATEWAY-
// REQUIREMENTS §16.1 "Subscriptions ⇄ GET stream"). A server without GET streams answers 405
// (2025-11-25/basic/transports.mdx §Listening for Messages: text/event-stream or 405), and list changes then
// come only with call responses. A 503 or 429 (a proxy in front of the server, a server briefly overloaded)
// says nothing of the kind: until 5 December any answer but a stream was taken for "no GET stream" on the
// session's first GET, and its listens stayed open and deaf for the session's life. Such a refusal is now a
// failed stream, opened again after the pause a failed stream waits. The upstream is a fake that must
// misbehave on purpose.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { startGateway } from '../helpers/gateway.js';
import { listenForToolChanges, startLegacyGetUpstream } from '../helpers/legacy-get-upstream.js';
import { readSseUntil } from '../helpers/sse.js';

test('a first GET refused 503 is opened again, and the listen hears what the stream then carries', async () => {
  let gets = 0;
  const streams: ServerResponse[] = [];
  const up = await startLegacyGetUpstream('busy', (res) => {
    if (++gets === 1) return void res.writeHead(503, { 'content-type': 'text/plain', 'retry-after': '1' }).end('upstream overloaded');
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })}\n\n`);
    streams.push(res);
  });
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }] });
  const ac = new AbortController();
  try {
    const res = await listenForToolChanges(gw.url, ac.signal);
    assert.equal(res.statusCode, 200);
    const messages = await readSseUntil(res.body, (m) => m.some((x) => x.method === 'notifications/tools/list_changed'), 5_000);
    assert.equal(messages[0]?.method, 'notifications/subscriptions/acknowledged');
    assert.ok(gets >= 2, `the GET was asked again after the 503 (asked ${gets} times)`);
    assert.ok(messages.some((m) => m.method === 'notifications/tools/list_changed'), `the listen hears the stream: ${JSON.stringify(messages)}`);
  } finally {
    ac.abort();
    for (const s of streams) s.end();
    await gw.close();
    await up.close();
  }
});
