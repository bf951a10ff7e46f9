// Time limits per tool (upstreams[].timeouts.tools). 2026-07-28/basic/patterns/cancellation.mdx §Timeouts
// and 2025-11-25/basic/lifecycle.mdx §Timeouts: "SDKs and other middleware SHOULD allow these timeouts to be
// configured on a per-request basis"; for a gateway the tool sets a call apart (a build may take an hour, a
// search should give up after seconds). A tool's limit replaces the upstream's `callMs` (HTTP: the whole
// answer, and the wait for its headers, up or down) or `requestMs` (stdio) for calls to that tool alone.
//
// The fake upstream misbehaves on purpose: `forever` streams progress and never answers, `late_*` and
// `slow_json` answer with JSON only after a while.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { startFakeUpstream, jsonResult, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, legacySession, modernRequest, post, rpc } from '../helpers/http.js';
import { readSseUntil } from '../helpers/sse.js';

const FAKE_STDIO = path.join(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/upstreams/stdio-fake.mjs');
const cleanup: Array<() => Promise<void>> = [];
after(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

/**
 * How long each `late_*` / `slow_json` call takes before its JSON answer: well past the shorter limits, as
 * undici checks a headers timeout on a coarse clock that ticks every 499 ms and dates a timer from the tick
 * before it, so a 600 ms limit fires anywhere between about 0.5 and 1.1 s (more on a busy machine).
 */
const COARSE_TICK_MS = 500;
const LATE_MS = 3_000;

function endlessStream(res: ServerResponse, progressToken: unknown, headers: Record<string, string>): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', ...headers });
  let n = 0;
  const timer = setInterval(() => res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken, progress: ++n } })}\n\n`), 100);
  res.on('close', () => clearInterval(timer));
}

async function fakeUpstream(era: 'legacy' | 'modern'): Promise<FakeUpstream> {
  const session: Record<string, string> = era === 'legacy' ? { 'mcp-session-id': 'timed-session' } : {};
  const complete = era === 'modern' ? { resultType: 'complete' } : {};
  const up = await startFakeUpstream(
    (req, res, body) => {
      if (req.method === 'GET') return void res.writeHead(405).end();
      if (req.method === 'DELETE') return void res.writeHead(200).end();
      const msg = JSON.parse(body) as { id?: unknown; method: string; params?: { name?: string; _meta?: { progressToken?: unknown } } };
      if (msg.id === undefined) return void res.writeHead(202).end();
      if (msg.method === 'initialize') return jsonResult(res, body, { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'timed', version: '1' } }, session);
      if (msg.method === 'tools/list') {
        const tools = ['forever', 'late_json', 'slow_json', 'other_json'].map((name) => ({ name, inputSchema: { type: 'object' } }));
        return jsonResult(res, body, { tools, ...(era === 'modern' ? { ttlMs: 0, cacheScope: 'public' } : {}), ...complete }, session);
      }
      if (msg.method !== 'tools/call') return jsonResult(res, body, complete, session);
      const name = msg.params?.name ?? '';
      if (name === 'forever') return endlessStream(res, msg.params?._meta?.progressToken ?? 'p', session);
      // JSON after a while: no headers until then, as a server that answers only when its tool is done.
      const timer = setTimeout(() => jsonResult(res, body, { content: [{ type: 'text', text: `${name} done` }], ...complete }, session), LATE_MS);
      res.on('close', () => clearTimeout(timer));
    },
    { handshake: era === 'modern' ? 'modern' : true },
  );
  cleanup.push(() => up.close());
  return up;
}

async function gateway(up: FakeUpstream, era: 'legacy' | 'modern', timeouts: Record<string, unknown>): Promise<TestGateway> {
  const gw = await startGateway({ upstreams: [{ name: 'timed', url: up.url, era, timeouts }] });
  cleanup.push(() => gw.close());
  return gw;
}

/** A legacy client's call through a fresh session: the answer (from JSON or the SSE stream) and how long it took. */
async function legacyCall(gw: TestGateway, id: number, name: string): Promise<{ answer: Record<string, any> | undefined; ms: number }> {
  const session = await legacySession(gw.url);
  const started = Date.now();
  const res = await request(gw.url, { method: 'POST', headers: { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }, body: rpc(id, 'tools/call', { name, arguments: {}, _meta: { progressToken: `t${id}` } }) });
  const messages = String(res.headers['content-type']).startsWith('text/event-stream') ? await readSseUntil(res.body, (ms) => ms.some((m) => m.id === id), 8_000) : [(await res.body.json()) as Record<string, any>];
  return { answer: messages.find((m) => m.id === id), ms: Date.now() - started };
}

async function modernCall(gw: TestGateway, id: number, name: string): Promise<{ answer: Record<string, any> | undefined; ms: number }> {
  const m = modernRequest(id, 'tools/call', { name, arguments: {}, _meta: { progressToken: `t${id}` } });
  const started = Date.now();
  const res = await request(gw.url, { method: 'POST', headers: m.headers, body: m.body });
  const messages = String(res.headers['content-type']).startsWith('text/event-stream') ? await readSseUntil(res.body, (ms) => ms.some((x) => x.id === id), 8_000) : [(await res.body.json()) as Record<string, any>];
  return { answer: messages.find((x) => x.id === id), ms: Date.now() - started };
}

/**
 * The call was cut, and not before its limit. Which limit cut it is told by causes, not by how soon: a
 * `late_*` call not cut by its limit gets the upstream's answer at LATE_MS (a result, not this error), and
 * the `forever` stream's cut names the setting. (An upper bound on the time only failed a loaded machine.)
 */
function assertTimedOut(call: { answer: Record<string, any> | undefined; ms: number }, atLeastMs: number, setting?: RegExp): void {
  assert.equal(call.answer?.error?.data?.code, 'GW_ERR_UPSTREAM_TIMEOUT', JSON.stringify(call.answer));
  if (setting) assert.match(call.answer!.error.message, setting);
  const earliest = Math.max(0, atLeastMs - COARSE_TICK_MS);
  assert.ok(call.ms >= earliest, `cut after ${call.ms} ms, before ${earliest} ms`);
}

function assertAnswered(call: { answer: Record<string, any> | undefined }, text: string): void {
  assert.equal(call.answer?.result?.content?.[0]?.text, text, JSON.stringify(call.answer));
}

describe('timeouts.tools: an HTTP upstream, pass-through', () => {
  test('legacy: a streamed answer is cut at its tool\'s limit, not at callMs', async () => {
    const gw = await gateway(await fakeUpstream('legacy'), 'legacy', { callMs: 60_000, tools: { forever: 800 } });
    assertTimedOut(await legacyCall(gw, 1, 'forever'), 800, /within 800 ms \(timeouts\.tools\)/);
  });

  test('modern: the same', async () => {
    const gw = await gateway(await fakeUpstream('modern'), 'modern', { callMs: 60_000, tools: { 'for*': 800 } });
    assertTimedOut(await modernCall(gw, 2, 'forever'), 800, /within 800 ms \(timeouts\.tools\)/);
  });

  test('legacy: a tool limit shorter than headersMs bounds the wait for a JSON answer; one longer lets it come', async () => {
    // headersMs at its default (60 s): only the tool's own limit can cut the answer before it comes.
    const shorter = await gateway(await fakeUpstream('legacy'), 'legacy', { tools: { 'late_*': 400 } });
    assertTimedOut(await legacyCall(shorter, 3, 'late_json'), 400);
    const longer = await gateway(await fakeUpstream('legacy'), 'legacy', { headersMs: 600, tools: { slow_json: 5_000 } });
    assertAnswered(await legacyCall(longer, 4, 'slow_json'), 'slow_json done');
    // A tool without a limit of its own keeps the upstream's headersMs.
    assertTimedOut(await legacyCall(longer, 5, 'other_json'), 600);
  });
});

describe('timeouts.tools: an HTTP upstream of the other era (the bridges post the calls themselves)', () => {
  test('a legacy client in front of a modern upstream', async () => {
    const gw = await gateway(await fakeUpstream('modern'), 'modern', { headersMs: 600, tools: { slow_json: 5_000, late_json: 400 } });
    assertAnswered(await legacyCall(gw, 6, 'slow_json'), 'slow_json done');
    assertTimedOut(await legacyCall(gw, 7, 'late_json'), 400, /within 400 ms \(timeouts\.tools\)/);
  });

  test('a modern client in front of a legacy upstream', async () => {
    const gw = await gateway(await fakeUpstream('legacy'), 'legacy', { headersMs: 600, tools: { slow_json: 5_000, late_json: 400 } });
    assertAnswered(await modernCall(gw, 8, 'slow_json'), 'slow_json done');
    assertTimedOut(await modernCall(gw, 9, 'late_json'), 400, /within 400 ms \(timeouts\.tools\)/);
  });
});

describe('timeouts.tools: a stdio upstream', () => {
  for (const processes of ['shared', 'perSession'] as const) {
    test(`${processes}: a tool's limit replaces requestMs for its calls alone`, async () => {
      const gw = await startGateway({ upstreams: [{ name: 'fake', command: [process.execPath, FAKE_STDIO], processes, timeouts: { requestMs: 500, tools: { slow_long: 5_000 } } }] });
      cleanup.push(() => gw.close());
      const init = await post(gw.url, rpc(0, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
      const headers = { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': '2025-11-25' };
      const long = await post(gw.url, rpc(1, 'tools/call', { name: 'slow_long', arguments: { ms: 900 } }), headers);
      assert.equal(long.json().result?.content?.[0]?.text, 'slow 900', long.text);
      // 3 s of work against a 500 ms limit: on a busy machine the gateway's timer may fire late, and with a
      // task only 400 ms past the limit the answer could come first.
      const short = await post(gw.url, rpc(2, 'tools/call', { name: 'slow', arguments: { ms: 3_000 } }), headers);
      assert.equal(short.json().error?.data?.code, 'GW_ERR_UPSTREAM_TIMEOUT', short.text);
      assert.match(short.json().error.message, /within 500 ms/);
    });
  }
});
