// Long-lived streams to an HTTP upstream must not take the connections its calls need. Each HTTP+SSE client
// has Gatehouse hold a listening stream upstream for it (a GET on a legacy server, a subscriptions/listen on
// a modern one through the bridge: 2025-11-25/basic/transports.mdx §Listening for Messages; GATEWAY-
// REQUIREMENTS §16.2 "Subscriptions ⇄ GET stream"), for as long as the client stays connected, and each keeps
// one HTTP/1.1 connection busy. They came from the upstream's one pool (`pool.connections`, 64 by default):
// once as many streams were open as the pool has connections, every call to that upstream waited for a
// connection that never came free, whoever made it. Here the pool has 2 connections and three clients listen.

import diagnostics from 'node:diagnostics_channel';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { startEverythingHttp, type EverythingHttp } from '../fixtures/upstreams/everything-http.js';
import { startModernServer, type ModernServer } from '../fixtures/upstreams/modern-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/otlp.js';
import type { UpstreamAnswerEvent, UpstreamStartEvent } from '../../src/pipeline/events.js';

let everything: EverythingHttp;
let modern: ModernServer;
before(async () => {
  everything = await startEverythingHttp();
  modern = await startModernServer();
});
after(async () => {
  await everything?.close();
  await modern?.close();
});

/**
 * GET streams an upstream has answered (the listening streams Gatehouse opens for HTTP+SSE clients of a
 * legacy server), seen on the gateway's call events: the GET's upstream start, then its answer.
 */
function answeredGets(): { count(): number; stop(): void } {
  const gets = new Set<string>();
  let answered = 0;
  const onStart = (e: unknown): void => {
    const started = e as UpstreamStartEvent;
    if (started.ctx.httpMethod === 'GET') gets.add(started.callId);
  };
  const onAnswer = (e: unknown): void => {
    const answer = e as UpstreamAnswerEvent;
    if (gets.has(answer.callId) && answer.kind === 'relay') answered++;
  };
  diagnostics.subscribe('gatehouse:call:upstream-start', onStart);
  diagnostics.subscribe('gatehouse:call:upstream', onAnswer);
  return {
    count: () => answered,
    stop() {
      diagnostics.unsubscribe('gatehouse:call:upstream-start', onStart);
      diagnostics.unsubscribe('gatehouse:call:upstream', onAnswer);
    },
  };
}

const gets = answeredGets();
after(() => gets.stop());
const listensReceived = (): number => modern.requests.filter((r) => (r.body as { method?: unknown } | undefined)?.method === 'subscriptions/listen').length;

/** `listening`: how many listening streams are open upstream. */
const cells = [
  { label: 'a legacy server (its GET stream, passed through)', upstream: () => ({ name: 'ev', url: everything.url, era: 'legacy' }), tool: { name: 'echo', arguments: { message: 'hi' } }, listening: () => gets.count() },
  { label: 'a modern server (a subscriptions/listen, through the bridge)', upstream: () => ({ name: 'm', url: modern.url }), tool: { name: 'echo', arguments: { text: 'hi' } }, listening: listensReceived },
];

for (const cell of cells) {
  describe(`HTTP+SSE clients in front of ${cell.label}`, () => {
    let gw: TestGateway;
    const clients: Client[] = [];
    before(async () => {
      gw = await startGateway({ listen: { ssePath: '/sse' }, upstreams: [{ ...cell.upstream(), pool: { connections: 2 } }] });
    });
    after(async () => {
      for (const c of clients) await c.close().catch(() => {});
      await gw?.close();
    });

    test('three clients listening on a pool of two connections: every call is still answered', async () => {
      for (let i = 0; i < 3; i++) {
        const client = new Client({ name: `listener-${i}`, version: '1' });
        clients.push(client);
        // Bounded: a call that waits for a connection would otherwise wait for the call deadline.
        await client.connect(new SSEClientTransport(new URL('/sse', gw.origin)), { timeout: 5_000 });
        const result = (await client.callTool(cell.tool, undefined, { timeout: 5_000 })) as { content: Array<{ text: string }> };
        assert.match(result.content[0]!.text, /hi/, `client ${i}`);
        // Its listening stream is open upstream before the next client comes.
        await waitFor(`client ${i}'s listening stream upstream`, () => (cell.listening() > i ? true : undefined));
      }
      const first = (await clients[0]!.callTool(cell.tool, undefined, { timeout: 5_000 })) as { content: Array<{ text: string }> };
      assert.match(first.content[0]!.text, /hi/);
    });
  });
}
