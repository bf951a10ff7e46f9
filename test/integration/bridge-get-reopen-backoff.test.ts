// A modern subscriptions/listen in front of a legacy upstream is fed by that upstream's GET stream
// (GATEWAY-REQUIREMENTS §16.1 "Subscriptions ⇄ GET stream"), opened again when the upstream ends it. A server
// that answers the GET and ends it at once (a proxy that closes idle streams, a server that cannot keep them)
// is no stream worth reopening every second: until 4 December it was, forever, for as long as the client
// listened. The pause now doubles, up to 30 s, while streams keep ending at once, as a refused listen's does
// (bridge-listen-refused.test.ts) and as a client resuming a stream backs off (2025-11-25/basic/transports.mdx
// §Listening for Messages; the SSE `retry` field). The upstream is a fake that must misbehave on purpose.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway } from '../helpers/gateway.js';
import { listenForToolChanges, startLegacyGetUpstream } from '../helpers/legacy-get-upstream.js';
import { assertReopenedAfterDoublingPauses } from '../helpers/reopen-backoff.js';
import { readSseUntil } from '../helpers/sse.js';

test('an upstream GET stream that ends at once is reopened after pauses that double, not every second', async () => {
  const getsAt: number[] = [];
  const up = await startLegacyGetUpstream('closer', (res) => {
    getsAt.push(performance.now());
    // Answered, then ended at once.
    res.writeHead(200, { 'content-type': 'text/event-stream' }).end();
  });
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }] });
  const ac = new AbortController();
  try {
    const res = await listenForToolChanges(gw.url, ac.signal);
    assert.equal(res.statusCode, 200);
    assert.equal((await readSseUntil(res.body, (m) => m.length >= 1))[0]?.method, 'notifications/subscriptions/acknowledged');
    for (let i = 0; i < 100 && getsAt.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(getsAt.length, 1, 'the GET stream was opened for the listen');
    await assertReopenedAfterDoublingPauses(getsAt, 'the GET');
  } finally {
    ac.abort();
    await gw.close();
    await up.close();
  }
});
