// An upstream answer Gatehouse must hold whole (a governed call's JSON answer, read for its audit record and
// output check; a catalogued or bridged answer, read to be written again) is bounded: past 16 MiB
// (`MAX_WHOLE_BODY_BYTES`, the bound of one SSE event and one stdio line too) the call is the upstream's
// failure, GW_ERR_UPSTREAM_BAD_RESPONSE, audited as such, and the rest of the body is not read. Without the
// bound an upstream answering with gigabytes grew the gateway's memory until it failed.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAX_WHOLE_BODY_BYTES } from '../../src/pipeline/relay-body.js';
import { SseParser } from '../../src/protocol/sse.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const MiB = 1024 * 1024;
/** A valid answer's text this long: past the bound by 1 MiB. */
const BIG_TEXT = 'a'.repeat(MAX_WHOLE_BODY_BYTES + MiB);
/** How much the `endless` tool would send if nobody stopped reading (bounded, so the test ends either way). */
const ENDLESS_BYTES = 256 * MiB;
const PIECE = Buffer.alloc(64 * 1024, 'a');

/** Just under the bound, with the answer's envelope. */
const FITTING_TEXT = 'a'.repeat(MAX_WHOLE_BODY_BYTES - 1024);

const TOOLS = ['big', 'endless', 'small', 'fits', 'sse'].map((name) => ({ name, inputSchema: { type: 'object' } }));

/** What the upstream did with each `endless` answer: how much it wrote before the gateway stopped reading. */
const endless: Array<{ written: number; cut: boolean }> = [];
const ups: FakeUpstream[] = [];
const gateways: TestGateway[] = [];

async function upstream(): Promise<FakeUpstream> {
  const up = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown; method?: string; params?: { name?: string } };
    if (msg.id === undefined) return void res.writeHead(202).end();
    const id = JSON.stringify(msg.id);
    if (msg.method === 'tools/list') {
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { tools: TOOLS, resultType: 'complete' } }));
    }
    const name = msg.params?.name;
    if (name === 'sse') {
      // One SSE event of 2 MiB: past a lowered maxMessageBytes, within the default.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      return void res.end(`event: message\ndata: {"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"${'s'.repeat(2 * MiB)}"}],"resultType":"complete"}}\n\n`);
    }
    if (name === 'small' || name === 'big' || name === 'fits') {
      const text = name === 'big' ? BIG_TEXT : name === 'fits' ? FITTING_TEXT : 'small';
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(`{"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"${text}"}],"resultType":"complete"}}`);
    }
    // endless: a valid answer's opening, then text in pieces, with backpressure, until ENDLESS_BYTES.
    const record = { written: 0, cut: false };
    endless.push(record);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write(`{"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"`);
    res.on('close', () => {
      if (!res.writableFinished) record.cut = true;
    });
    const more = (): void => {
      while (record.written < ENDLESS_BYTES && !res.destroyed) {
        record.written += PIECE.length;
        if (!res.write(PIECE)) return void res.once('drain', more);
      }
      if (!res.destroyed) res.end('"}],"resultType":"complete"}}');
    };
    more();
  }, { handshake: 'modern' });
  ups.push(up);
  return up;
}

before(async () => {
  await upstream();
  await upstream();
});
after(async () => {
  for (const gw of gateways) await gw.close();
  for (const up of ups) await up.close();
});

function freshStorePath(): string {
  return join(mkdtempSync(join(tmpdir(), 'gatehouse-large-answers-')), 'gatehouse.db');
}

async function toolNames(gw: TestGateway): Promise<Record<string, string>> {
  const list = modernRequest(1, 'tools/list');
  const listed = (await post(gw.url, list.body, list.headers)).json().result.tools as Array<{ name: string }>;
  return Object.fromEntries(['big', 'endless', 'small', 'fits', 'sse'].map((n) => [n, listed.find((t) => t.name.endsWith(n))!.name]));
}

/** The response in an answer, JSON or the last message of an SSE stream. */
function answerOf(res: { text: string; headers: Record<string, unknown> }): Record<string, any> {
  if (!String(res.headers['content-type']).startsWith('text/event-stream')) return JSON.parse(res.text) as Record<string, any>;
  const events = new SseParser(Infinity).push(Buffer.from(res.text)).filter((e) => e.data !== undefined);
  return JSON.parse(events.at(-1)!.data!) as Record<string, any>;
}

async function call(gw: TestGateway, name: string, id: number) {
  const m = modernRequest(id, 'tools/call', { name, arguments: {} });
  return post(gw.url, m.body, m.headers);
}

describe('an upstream answer past 16 MiB, where Gatehouse must hold it whole', () => {
  for (const via of ['a governed call (SQLite audit)', 'the catalog (two upstreams)'] as const) {
    test(`${via}: GW_ERR_UPSTREAM_BAD_RESPONSE for the request's id; an endless answer is stopped; smaller answers pass`, { timeout: 120_000 }, async () => {
      const storePath = freshStorePath();
      const upstreams = via.startsWith('the catalog') ? ups.map((u, i) => ({ name: `u${i}`, url: u.url, era: 'modern' })) : [{ name: 'u0', url: ups[0]!.url, era: 'modern' }];
      const gw = await startGateway({ upstreams, store: { kind: 'sqlite', path: storePath } });
      gateways.push(gw);
      const names = await toolNames(gw);

      for (const [tool, id] of [['big', 2], ['endless', 3]] as const) {
        const res = await call(gw, names[tool]!, id);
        assert.equal(res.status, 502, res.text.slice(0, 300));
        assert.equal(res.json().id, id);
        assert.equal(res.json().error.data.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE');
        assert.match(res.json().error.message, new RegExp(`larger than ${MAX_WHOLE_BODY_BYTES} bytes`));
      }
      // The endless answer was not read to its end: the gateway hung up on it soon after the bound.
      const last = endless.at(-1)!;
      assert.equal(last.cut, true, 'the upstream connection was closed mid-answer');
      assert.ok(last.written < ENDLESS_BYTES / 2, `the upstream wrote ${last.written} bytes`);

      // Audited as the upstream failing, before the client heard of it.
      const store = new SqliteStore(storePath);
      try {
        const records = await store.readAudit({ limit: 100 });
        for (const tool of ['big', 'endless']) {
          assert.deepEqual(records.filter((r) => r.tool?.endsWith(tool)).map((r) => [r.outcome, r.refusal, r.stage]), [['failed', 'upstream_bad_response', 'upstream']], tool);
        }
      } finally {
        await store.close();
      }

      const res = await call(gw, names.small!, 4);
      assert.equal(res.status, 200, res.text.slice(0, 300));
      assert.equal(res.json().result.content[0].text, 'small');
      assert.equal(gw.logs.filter((l) => l.level === 'error').length, 0, JSON.stringify(gw.logs.filter((l) => l.level === 'error')).slice(0, 500));
    });
  }

  test('an answer just under the bound is held, recorded and passed on whole', { timeout: 60_000 }, async () => {
    const gw = await startGateway({ upstreams: [{ name: 'u0', url: ups[0]!.url, era: 'modern' }] });
    gateways.push(gw);
    const res = await call(gw, 'fits', 5);
    assert.equal(res.status, 200, res.text.slice(0, 300));
    assert.equal(res.json().result.content[0].text, FITTING_TEXT);
    assert.equal(typeof res.json().result._meta['dev.gatehouse/run_id'], 'string');
  });

  test('upstreams[].maxMessageBytes raised to 32 MiB: the 17 MiB answer is held, recorded and passed on, through the governed path and the catalog', { timeout: 120_000 }, async () => {
    for (const upstreams of [[{ name: 'u0', url: ups[0]!.url, era: 'modern', maxMessageBytes: 32 * MiB }], ups.map((u, i) => ({ name: `u${i}`, url: u.url, era: 'modern', maxMessageBytes: 32 * MiB }))]) {
      const gw = await startGateway({ upstreams });
      gateways.push(gw);
      const names = await toolNames(gw);
      const res = await call(gw, names.big!, 6);
      assert.equal(res.status, 200, res.text.slice(0, 300));
      assert.equal(res.json().result.content[0].text.length, BIG_TEXT.length);
    }
  });

  test('upstreams[].maxMessageBytes lowered to 1 MiB: a 2 MiB SSE event is the upstream\'s failure, through the governed path and the catalog', { timeout: 60_000 }, async () => {
    for (const upstreams of [[{ name: 'u0', url: ups[0]!.url, era: 'modern', maxMessageBytes: MiB }], ups.map((u, i) => ({ name: `u${i}`, url: u.url, era: 'modern', maxMessageBytes: MiB }))]) {
      const gw = await startGateway({ upstreams });
      gateways.push(gw);
      const names = await toolNames(gw);
      const answer = answerOf(await call(gw, names.sse!, 7));
      assert.equal(answer.error?.data?.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE', JSON.stringify(answer).slice(0, 300));
      assert.equal(answer.id, 7);
    }
    // Within the default bound the same event passes.
    const gw = await startGateway({ upstreams: [{ name: 'u0', url: ups[0]!.url, era: 'modern' }] });
    gateways.push(gw);
    const answer = answerOf(await call(gw, 'sse', 8));
    assert.equal(answer.result?.content?.[0]?.text?.length, 2 * MiB, JSON.stringify(answer).slice(0, 300));
  });
});
