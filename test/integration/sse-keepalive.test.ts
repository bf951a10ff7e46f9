// A keep-alive comment from an upstream reaches the client while the call is still running. An SSE comment
// is a line that starts with `:` (WHATWG HTML §9.2.6, which 2026-07-28/basic/transports/streamable-http.mdx
// and 2025-11-25/basic/transports.mdx build on); a server may send one alone, with no blank line after it,
// to keep idle connections (and the proxies between) open during a long call. Gatehouse frames events at
// blank lines, and used to hold such a comment until the next blank line, which for a slow tool was the
// answer itself: the keep-alive kept nothing alive.
//
// The upstream writes `: keep-alive\n` and then waits until the test has seen that comment arrive at the
// client, or 3 s; only then does it answer. Without the comment passed on at once, the client sees it only
// with the answer, after the wait.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startFakeUpstream, jsonResult, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, legacySession, modernRequest, rpc } from '../helpers/http.js';

const HOLD_MS = 3_000;
const cleanup: Array<() => Promise<void>> = [];
after(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

interface SlowUpstream {
  upstream: FakeUpstream;
  /** Lets the held call answer. */
  release(): void;
  /** When the held call answered (ms since the epoch), once it has. */
  answeredAt?: number;
}

/** An upstream whose tools/call answers as an SSE stream: a lone comment line, then the answer once released. */
async function slowUpstream(era: 'legacy' | 'modern'): Promise<SlowUpstream> {
  let release = (): void => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  const state = { release: () => release() } as SlowUpstream;
  const session: Record<string, string> = era === 'legacy' ? { 'mcp-session-id': 'slow-session' } : {};
  state.upstream = await startFakeUpstream(
    (req, res, body) => {
      if (req.method === 'GET') return void res.writeHead(405).end();
      if (req.method === 'DELETE') return void res.writeHead(200).end();
      const msg = JSON.parse(body) as { id?: unknown; method: string };
      if (msg.id === undefined) return void res.writeHead(202).end();
      if (msg.method === 'initialize') return jsonResult(res, body, { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'slow', version: '1' } }, session);
      if (msg.method === 'tools/list') return jsonResult(res, body, { tools: [{ name: 'slow', inputSchema: { type: 'object' } }], ...(era === 'modern' ? { resultType: 'complete', ttlMs: 0, cacheScope: 'public' } : {}) }, session);
      if (msg.method !== 'tools/call') return jsonResult(res, body, era === 'modern' ? { resultType: 'complete' } : {}, session);
      res.writeHead(200, { 'content-type': 'text/event-stream', ...session });
      res.write(': keep-alive\n');
      const hold = setTimeout(release, HOLD_MS);
      void released.then(() => {
        clearTimeout(hold);
        state.answeredAt = Date.now();
        const result = { content: [{ type: 'text', text: 'done' }], ...(era === 'modern' ? { resultType: 'complete' } : {}) };
        res.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result })}\n\n`);
      });
    },
    { handshake: era === 'modern' ? 'modern' : true },
  );
  cleanup.push(() => state.upstream.close());
  return state;
}

/** Posts the call and reads its SSE answer as text: when the comment arrived, and the whole text. */
async function callThrough(url: string, body: string, headers: Record<string, string>, up: SlowUpstream): Promise<{ commentAt: number | undefined; text: string }> {
  const res = await request(url, { method: 'POST', headers, body });
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers['content-type']), /^text\/event-stream/);
  let text = '';
  let commentAt: number | undefined;
  for await (const chunk of res.body) {
    text += (chunk as Buffer).toString('utf8');
    if (commentAt === undefined && text.includes(': keep-alive\n')) {
      commentAt = Date.now();
      up.release();
    }
  }
  return { commentAt, text };
}

function assertPassedOnAtOnce(up: SlowUpstream, seen: { commentAt: number | undefined; text: string }): void {
  assert.ok(seen.commentAt !== undefined, `the comment reached the client: ${JSON.stringify(seen.text)}`);
  assert.ok(up.answeredAt !== undefined && seen.commentAt <= up.answeredAt, `the comment reached the client before the upstream answered (it came ${seen.commentAt - (up.answeredAt ?? 0)} ms after)`);
  assert.ok(seen.text.startsWith(': keep-alive\n'), 'and it came first, as it was sent');
  assert.match(seen.text, /"text":"done"/, 'the answer followed');
}

describe('an upstream keep-alive comment without a blank line is passed on at once', () => {
  test('legacy pass-through (no audit)', async () => {
    const up = await slowUpstream('legacy');
    const gw = await startGateway({ upstreams: [{ name: 'slow', url: up.upstream.url, era: 'legacy' }], audit: { enabled: false } });
    cleanup.push(() => gw.close());
    const session = await legacySession(gw.url);
    const seen = await callThrough(gw.url, rpc(1, 'tools/call', { name: 'slow', arguments: {} }), { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }, up);
    assertPassedOnAtOnce(up, seen);
  });

  test('legacy, audited (the answer event is held for its record; the comment before it is not)', async () => {
    const up = await slowUpstream('legacy');
    const gw = await startGateway({ upstreams: [{ name: 'slow', url: up.upstream.url, era: 'legacy' }], audit: { enabled: true } });
    cleanup.push(() => gw.close());
    const session = await legacySession(gw.url);
    const seen = await callThrough(gw.url, rpc(2, 'tools/call', { name: 'slow', arguments: {} }), { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }, up);
    assertPassedOnAtOnce(up, seen);
    assert.match(seen.text, /dev\.gatehouse\/run_id/, 'the answer carries its audit run id');
  });

  test('modern pass-through, audited', async () => {
    const up = await slowUpstream('modern');
    const gw = await startGateway({ upstreams: [{ name: 'slow', url: up.upstream.url, era: 'modern' }], audit: { enabled: true } });
    cleanup.push(() => gw.close());
    const m = modernRequest(3, 'tools/call', { name: 'slow', arguments: {} });
    const seen = await callThrough(gw.url, m.body, m.headers, up);
    assertPassedOnAtOnce(up, seen);
  });
});
