// An upstream's answer labelled `Text/Event-Stream; charset=UTF-8` is an event stream: a media type's type and
// subtype are case-insensitive (RFC 9110 §8.3.1), and 2026-07-28/basic/transports/streamable-http.mdx §Sending
// Messages lets a server answer a POST with one. The answer path compared the label case-sensitively, as a
// prefix, so such an answer was read as a JSON body: the audited call was recorded `failed` and answered 502
// (GW_ERR_UPSTREAM_BAD_RESPONSE) where the upstream had answered the call. A longer subtype
// (`text/event-streams`) is no event stream, and stays the bad answer it is.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { isEventStreamType } from '../../src/protocol/sse.js';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

/** The content type each tool's answer is labelled with. */
const LABELS: Record<string, string> = {
  upper: 'Text/Event-Stream; charset=UTF-8',
  spaced: 'text/event-stream ;charset=utf-8',
  longer: 'text/event-streams',
};

let up: FakeUpstream;
let gw: TestGateway;
let storePath: string;

before(async () => {
  up = await startFakeUpstream(
    (_req, res, body) => {
      const msg = JSON.parse(body) as { id?: unknown; method: string; params?: { name?: string } };
      if (msg.method === 'tools/list') {
        const tools = Object.keys(LABELS).map((name) => ({ name, inputSchema: { type: 'object' } }));
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { tools, resultType: 'complete', ttlMs: 0, cacheScope: 'public' } }));
      }
      const label = LABELS[msg.params?.name ?? ''];
      if (label === undefined) return void res.writeHead(500).end();
      const answer = { jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'answered' }], resultType: 'complete' } };
      res.writeHead(200, { 'content-type': label }).end(`event: message\ndata: ${JSON.stringify(answer)}\n\n`);
    },
    { handshake: 'modern' },
  );
  storePath = join(mkdtempSync(join(tmpdir(), 'gatehouse-sse-media-type-')), 'gatehouse.db');
  gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], store: { kind: 'sqlite', path: storePath } });
});
after(async () => {
  await gw?.close();
  await up?.close();
});

async function outcomeOf(tool: string): Promise<string | undefined> {
  const store = new SqliteStore(storePath);
  try {
    return (await store.readAudit({ limit: 100 })).find((r) => r.tool === tool)?.outcome;
  } finally {
    await store.close();
  }
}

for (const [tool, id] of [['upper', 1], ['spaced', 2]] as const) {
  test(`an answer labelled "${LABELS[tool]}" is read as the event stream it is: answered, and audited ok`, async () => {
    const m = modernRequest(id, 'tools/call', { name: tool, arguments: {} });
    const res = await post(gw.url, m.body, m.headers);
    assert.equal(res.status, 200, res.text);
    assert.match(res.text, /"text":"answered"/);
    assert.equal(await outcomeOf(tool), 'ok');
  });
}

test('"text/event-streams" is not an event stream: a bad answer, audited as failed', async () => {
  const m = modernRequest(3, 'tools/call', { name: 'longer', arguments: {} });
  const res = await post(gw.url, m.body, m.headers);
  assert.equal(res.status, 502, res.text);
  assert.equal(await outcomeOf('longer'), 'failed');
});

test('isEventStreamType: any case, parameters, white space; not a longer subtype or another type', () => {
  for (const yes of ['text/event-stream', 'TEXT/EVENT-STREAM', 'Text/Event-Stream; charset=UTF-8', ' text/event-stream', 'text/event-stream\t;x=1', 'text/event-stream ']) assert.equal(isEventStreamType(yes), true, yes);
  for (const no of ['', 'application/json', 'text/event-streams', 'text/event-stream-x', 'text/event', 'text/eventOstream', 'text/event-stream,x', 'xtext/event-stream']) assert.equal(isEventStreamType(no), false, no);
});
