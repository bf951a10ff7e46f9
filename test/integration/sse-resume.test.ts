// Streams a 2025-11-25 server closes on purpose ("polling"), taken up again by Gatehouse: where it is the
// client (the modern-client bridge and its listen hub), and on the legacy pass-through, where it resumes
// the answer itself so the call stays governed (2025-11-25/basic/transports.mdx §Sending Messages 6,
// §Listening for Messages 4, §Resumability and Redelivery; GATEWAY-REQUIREMENTS §2). The upstream is the v1
// SDK's server with an event store (test/fixtures/upstreams/polling-server.ts); the clients are the v2 SDK
// pinned to 2026-07-28, the v1 SDK, and plain HTTP.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { startFakeUpstream, sleep } from '../fixtures/upstreams/fake-upstream.js';
import { startPollingServer } from '../fixtures/upstreams/polling-server.js';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, legacySession, modernRequest } from '../helpers/http.js';
import { connectClient, textOf, type ProgressEvent } from '../helpers/matrix-clients.js';
import { readSseUntil } from '../helpers/sse.js';
import { connectV1, textOf as v1TextOf } from '../helpers/v1-everything.js';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});


describe('modern client → legacy server that closes its streams (polling)', () => {
  test('a tool call whose reply stream is closed twice is answered, with the progress sent while Gatehouse was away', async () => {
    const up = await startPollingServer({ retryMs: 100 });
    cleanups.push(() => up.close());
    const gw = await startGateway({ upstreams: [{ name: 'poll', url: up.url, era: 'legacy' }] });
    cleanups.push(() => gw.close());
    const client = await connectClient('v2-pinned-client', gw.url);
    cleanups.push(() => client.close());
    assert.equal(client.era(), 'modern');

    const progress: ProgressEvent[] = [];
    const result = await client.callTool('poll_twice', {}, { onprogress: (p) => progress.push(p) });
    assert.equal(textOf(result), 'answered after two closes');
    assert.deepEqual(progress.map((p) => p.progress), [1, 2], 'the progress stored while no connection was open is replayed');
    assert.equal(up.resumes.length, 2, `one GET with Last-Event-ID per close: ${JSON.stringify(up.resumes)}`);
    // The first resume names the priming event, the second an event of the same stream after it.
    const [first, second] = up.resumes.map((id) => id.split('::'));
    assert.equal(first![0], second![0], 'both resumes continue the reply stream');
    assert.ok(Number(second![1]) > Number(first![1]));
    // §Sending Messages 6: the client MUST wait the `retry` the server sent before reconnecting. That wait is
    // checked on a mocked clock, a tick short and on the tick, in test/unit/upstream/resumable-sse.test.ts.

    // The session stays usable afterwards.
    assert.equal(textOf(await client.callTool('slow_echo', { text: 'still here' })), 'still here');
  });

  test('a listen keeps its notifications across a GET stream the server closes: the one sent meanwhile is replayed', async () => {
    const up = await startPollingServer({ retryMs: 100 });
    cleanups.push(() => up.close());
    const gw = await startGateway({ upstreams: [{ name: 'poll', url: up.url, era: 'legacy' }] });
    cleanups.push(() => gw.close());
    const listen = modernRequest(1, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
    const ac = new AbortController();
    cleanups.push(async () => ac.abort());
    const res = await request(gw.url, { method: 'POST', headers: listen.headers, body: listen.body, signal: ac.signal });
    assert.equal(res.headers['content-type'], 'text/event-stream');
    const acked = await readSseUntil(res.body, (m) => m.length >= 1, 8_000);
    assert.equal(acked[0]?.method, 'notifications/subscriptions/acknowledged');
    // Wait for the upstream GET stream, then give it an event (and so an event id) before closing it.
    for (let i = 0; i < 100 && up.freshGets === 0; i++) await sleep(20);
    const changed = (msgs: any[]): number => msgs.filter((m) => m.method === 'notifications/tools/list_changed').length;
    await up.toolsChanged();
    assert.equal(changed(await readSseUntil(res.body, (m) => changed(m) >= 1, 8_000)), 1);

    up.closeListenStreams();
    await up.toolsChanged(); // no connection open: stored for replay only
    const replayed = await readSseUntil(res.body, (m) => changed(m) >= 1, 8_000);
    assert.equal(changed(replayed), 1, 'the change announced while the GET stream was closed reached the listener');
    assert.equal(up.resumes.length, 1, `the GET stream was resumed with Last-Event-ID: ${JSON.stringify(up.resumes)}`);
  });

  test('a resume the server refuses ends the call with a clear error instead of a hang', async () => {
    let gets = 0;
    const up = await startFakeUpstream((req, res, body) => {
      if (req.method === 'GET') {
        gets++;
        return void res.writeHead(405).end();
      }
      if (req.method !== 'POST') return void res.writeHead(200).end();
      const msg = JSON.parse(body) as { id?: unknown; method?: string };
      if (msg.id === undefined) return void res.writeHead(202).end();
      if (msg.method === 'initialize') {
        return void res
          .writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's-1' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'refuses-resume', version: '1' } } }));
      }
      // A priming event with an id and a retry, then the connection closes before any answer.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('id: e-1\nretry: 20\ndata: \n\n');
    }, { handshake: false });
    cleanups.push(() => up.close());
    const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }] });
    cleanups.push(() => gw.close());
    const call = modernRequest(3, 'tools/call', { name: 'anything', arguments: {} });
    const res = await request(gw.url, { method: 'POST', headers: call.headers, body: call.body, signal: AbortSignal.timeout(10_000) });
    const text = await res.body.text();
    const answer = (text.startsWith('{') ? JSON.parse(text) : JSON.parse(text.split('\n').find((l) => l.startsWith('data: {'))!.slice(6))) as { id: number; error?: { message: string; data?: { code?: string } } };
    assert.equal(answer.id, 3);
    assert.equal(answer.error?.data?.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE', JSON.stringify(answer));
    assert.match(answer.error!.message, /refused to resume its stream \(HTTP 405\)/);
    assert.ok(gets >= 1, 'the resume was tried');
  });
});

describe('legacy client → legacy server that closes its streams (the pass-through)', () => {
  test('Gatehouse resumes the answer stream itself: the client gets one stream with the answer, and the call is audited with it', async () => {
    const up = await startPollingServer({ retryMs: 100 });
    cleanups.push(() => up.close());
    const storePath = join(mkdtempSync(join(tmpdir(), 'gatehouse-resume-')), 'gatehouse.db');
    const gw = await startGateway({ upstreams: [{ name: 'poll', url: up.url, era: 'legacy' }], store: { kind: 'sqlite', path: storePath } });
    cleanups.push(() => gw.close());

    // Raw HTTP: the POST's own answer carries the response, though the upstream closed its connection twice.
    const session = await legacySession(gw.url);
    const headers = { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
    await request(gw.url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) }).then((r) => r.body.dump());
    const res = await request(gw.url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'poll_twice', arguments: {}, _meta: { progressToken: 'p' } } }), signal: AbortSignal.timeout(10_000) });
    assert.equal(res.headers['content-type'], 'text/event-stream');
    const messages = await readSseUntil(res.body, (m) => m.some((x) => x.id === 5), 8_000);
    const answer = messages.find((m) => m.id === 5);
    assert.equal(answer?.result?.content?.[0]?.text, 'answered after two closes', JSON.stringify(messages));
    assert.deepEqual(messages.filter((m) => m.method === 'notifications/progress').map((m) => m.params.progress), [1, 2], 'the progress sent while no connection was open was replayed to Gatehouse, and relayed');
    assert.equal(up.resumes.length, 2, 'Gatehouse resumed with Last-Event-ID twice');

    // The v1 SDK client sees a plain answer too.
    const { client } = await connectV1(gw.url, { name: 'v1-resume', timeoutMs: 10_000 });
    cleanups.push(() => client.close());
    assert.equal(v1TextOf(await client.callTool({ name: 'poll_twice', arguments: {} })), 'answered after two closes');
    assert.equal(up.resumes.length, 4);

    // Both calls are governed to their end: each has its audit record, with the answer's outcome.
    const store = new SqliteStore(storePath);
    try {
      let records: Awaited<ReturnType<SqliteStore['readAudit']>> = [];
      for (let i = 0; i < 50 && records.length < 2; i++) {
        records = (await store.readAudit({ limit: 100 })).filter((r) => r.tool === 'poll_twice');
        if (records.length < 2) await sleep(50);
      }
      assert.equal(records.length, 2, JSON.stringify(records));
      assert.ok(records.every((r) => r.outcome === 'ok'), JSON.stringify(records.map((r) => r.outcome)));
    } finally {
      await store.close();
    }
  });
});
