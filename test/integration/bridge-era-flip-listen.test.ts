// A legacy client's GET stream in front of a modern upstream is fed by an upstream subscriptions/listen, opened
// again a while after the upstream ends it (GATEWAY-REQUIREMENTS §16.2 "Subscriptions ⇄ GET stream"). The
// upstream's era may change meanwhile: redeployed (rolled back) as a legacy server, its 400 to a bridged call
// makes Gatehouse forget its verdict (era-probe.ts: a 400 without a modern error body, maybe no longer modern),
// and the next request probes it again. The reopen read the verdict as if it were still a modern one: with
// none it threw a TypeError, with a legacy one too (no discover result), outside any handler, and the
// unhandled rejection ended the Gatehouse process (Node's default), every upstream's and every client's calls
// with it. Now a listen reopened while the verdict is unknown waits another pause; once the upstream is known
// to be legacy, the bridged session is ended (its client learns from the 404 to start anew, as a legacy
// client of a legacy server, 2025-11-25/basic/transports.mdx §Session Management 4).
//
// Real parts: the modern upstream is the v2 SDK server fixture, the legacy one a v1 SDK server (stateless),
// both behind one address (a plain TCP-level relay in the test, switched at the "redeploy"), the client the v1 SDK.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { startModernServer } from '../fixtures/upstreams/modern-server.js';
import { startGateway } from '../helpers/gateway.js';
import { startRedeployFront } from '../helpers/redeploy-front.js';
import { waitUntil } from '../helpers/stdio-children.js';

/** A v1 SDK server without sessions (a new transport per request), as its stateless example serves. */
async function legacyServe(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  const server = new McpServer({ name: 'rolled-back', version: '0.9.0' });
  server.registerTool('legacy-echo', { description: 'echo' }, async () => ({ content: [{ type: 'text', text: 'from the legacy server' }] }));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => void transport.close().catch(() => {}));
  await server.connect(transport);
  await transport.handleRequest(req, res, text === '' ? undefined : JSON.parse(text));
}

test('a listen reopened after the upstream changed era does not take Gatehouse down; the bridged session ends and new clients reach the legacy server', { timeout: 60_000 }, async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  const modern = await startModernServer();
  // One address for the upstream, as a redeploy keeps it: relayed to the modern server, then served by the legacy one.
  const front = await startRedeployFront(modern.url);
  const gw = await startGateway({ upstreams: [{ name: 'app', url: front.url }] });
  const client = new Client({ name: 'listener', version: '1.0.0' });
  const later = new Client({ name: 'after-rollback', version: '1.0.0' });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)), { timeout: 10_000 });
    // The v1 client opens its GET stream after initialized; Gatehouse feeds it from an upstream listen.
    const listens = (): number => modern.requests.filter((r) => (r.body as { method?: string } | undefined)?.method === 'subscriptions/listen').length;
    assert.ok(await waitUntil(() => listens() === 1, 10_000), 'the GET stream opened an upstream listen');

    // The redeploy: the same address now serves a legacy server. A bridged call gets its 400 (it knows no
    // 2026-07-28), which makes Gatehouse forget the modern verdict.
    front.switchTo((req, res) => void legacyServe(req, res).catch(() => res.destroy()));
    await assert.rejects(client.callTool({ name: 'echo', arguments: { text: 'x' } }, undefined, { timeout: 10_000 }));
    // The old server's connections end with it, the listen's too: the bridge opens it again after a second.
    front.dropConnections();
    await new Promise((r) => setTimeout(r, 2_500));
    assert.deepEqual(unhandled.map(String), [], 'no unhandled rejection (in production, the end of the process)');

    // A new client's initialize probes the upstream again (legacy now) and is passed through to it.
    await later.connect(new StreamableHTTPClientTransport(new URL(gw.url)), { timeout: 10_000 });
    const { tools } = await later.listTools(undefined, { timeout: 10_000 });
    assert.deepEqual(tools.map((t) => t.name), ['legacy-echo']);

    // The next reopen of the old session's listen finds the upstream legacy: the session is ended, not
    // served as a modern upstream's, and nothing throws.
    assert.ok(
      await waitUntil(() => gw.logs.some((l) => l.msg === 'bridged session ended'), 10_000),
      `the bridged session ended: ${JSON.stringify(gw.logs.filter((l) => String(l.msg).includes('listen') || String(l.msg).includes('bridged')))}`,
    );
    assert.deepEqual(unhandled.map(String), [], 'no unhandled rejection');
  } finally {
    process.off('unhandledRejection', onUnhandled);
    await later.close().catch(() => {});
    await client.close().catch(() => {});
    await gw.close();
    await front.close();
    await modern.close();
  }
});
