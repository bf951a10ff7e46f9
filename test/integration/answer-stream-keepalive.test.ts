// A call's answer that became an SSE stream (a progress notification came before it) and then goes quiet
// while the tool works: Gatehouse writes keep-alive comments on it every 15 s (KEEPALIVE_MS), as it does on
// listen streams, batch answers, approval waits and HTTP+SSE connections, so that a proxy in between (nginx
// times a response out after 60 s without a byte by default) does not cut it. GATEWAY-REQUIREMENTS:
// "emit periodic SSE comment lines (`:`) as keep-alives on long streams"; clients ignore comments (WHATWG
// HTML §9.2.5). Until 4 December a call's stream made by Gatehouse (an HTTP+SSE or stdio upstream, a bridge)
// carried nothing between its progress and its answer, however long the tool took.
//
// The upstream is the real v1 SDK (McpServer over SSEServerTransport, the 2024-11-05 transport).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KEEPALIVE_MS } from '../../src/edge/answer.js';
import { startGateway } from '../helpers/gateway.js';
import { startV1SseServer } from '../helpers/v1-sse-server.js';
import { openLegacySession, rpc } from '../helpers/http.js';

const QUIET_MS = KEEPALIVE_MS + 1_500;

function sdkSseServer(): Promise<{ url: string; close(): Promise<void> }> {
  return startV1SseServer('quiet', (mcp) => {
    mcp.tool('quiet', 'reports progress once, then works in silence', async (extra) => {
      const token = extra._meta?.progressToken;
      if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: 0, total: 1 } });
      await new Promise((r) => setTimeout(r, QUIET_MS));
      return { content: [{ type: 'text', text: 'done' }] };
    });
  });
}

test('a call answer stream that goes quiet after its progress gets keep-alive comments until the answer', { timeout: 60_000 }, async () => {
  const up = await sdkSseServer();
  const gw = await startGateway({ upstreams: [{ name: 'q', url: up.url, transport: 'sse', era: 'legacy' }] });
  try {
    const { headers } = await openLegacySession(gw.url, 'quiet-client', '2025-06-18');
    assert.ok(headers, 'the session opened');
    const res = await fetch(gw.url, { method: 'POST', headers, body: rpc('q1', 'tools/call', { name: 'quiet', arguments: {}, _meta: { progressToken: 'p' } }) });
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    // What came on the stream, in order: progress, comments, answer.
    const seen: string[] = [];
    let text = '';
    const decoder = new TextDecoder();
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      text += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = text.indexOf('\n\n')) >= 0) {
        const event = text.slice(0, end);
        text = text.slice(end + 2);
        seen.push(event.startsWith(':') ? 'comment' : event.includes('notifications/progress') ? 'progress' : event.includes('"id":"q1"') ? 'answer' : event);
      }
    }
    assert.equal(seen[0], 'progress', seen.join(', '));
    assert.equal(seen.at(-1), 'answer', seen.join(', '));
    assert.ok(seen.slice(1, -1).includes('comment'), `no keep-alive in ${QUIET_MS} ms of silence: ${seen.join(', ')}`);
  } finally {
    await gw.close();
    await up.close();
  }
});
