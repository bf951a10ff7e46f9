// A short SSE answer read once for the three steps that look at it (the legacy pass-through's "does it hold
// the answer?", the audit's interception, the edge's relay): its events split once, each event's JSON
// parsed at most once (bench/README.md §SSE answers; the response an answer event carries follows
// 2025-11-25/basic/transports.mdx §Sending Messages 6: the server's response to the request on its stream).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { answers, WholeSse } from '../../../src/protocol/whole-sse.js';
import { RelayBody } from '../../../src/pipeline/relay-body.js';
import { interceptFinal } from '../../../src/pipeline/final-answer.js';
import { relayWholeSse } from '../../../src/edge/sse-relay.js';
import { answeredWhole } from '../../../src/upstream/resumable-sse.js';
import type { CallContext } from '../../../src/pipeline/context.js';
import type { Outcome } from '../../../src/pipeline/outcome.js';
import { GatewayError } from '../../../src/errors.js';
import { Cancellation } from '../../../src/pipeline/cancellation.js';

const PROGRESS = 'id: ev-1\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}\n\n';
const ANSWER = 'id: ev-2\ndata: {"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}\n\n';

test('the events are split once; a stream cut inside an event is not complete', () => {
  const reading = WholeSse.read(Buffer.from(PROGRESS + ANSWER));
  assert.equal(reading.complete, true);
  assert.deepEqual(reading.events.map((e) => e.id), ['ev-1', 'ev-2']);
  assert.equal(WholeSse.read(PROGRESS + 'data: {"jsonrpc":"2.0","id":1').complete, false);
});

test("each event's JSON is parsed the first time it is asked for, and never again", () => {
  const reading = WholeSse.read(PROGRESS + ANSWER + 'data: not json "id"\n\n');
  const parse = JSON.parse;
  let parses = 0;
  JSON.parse = ((text: string, reviver?: (k: string, v: unknown) => unknown) => {
    parses++;
    return parse(text, reviver);
  }) as typeof JSON.parse;
  try {
    assert.equal(reading.message(0), undefined, 'a notification carries no "id": not even parsed');
    assert.deepEqual(reading.message(1), { jsonrpc: '2.0', id: 1, result: { content: [], isError: true } });
    assert.equal(reading.message(2), undefined, 'not JSON: undefined');
    assert.equal(parses, 2);
    reading.message(1);
    reading.message(2);
    assert.equal(reading.answerAt(1, true), 1);
    assert.equal(parses, 2, 'asked again: kept');
  } finally {
    JSON.parse = parse;
  }
});

test('the answer: that id and no method; strict asks for a result or an error as well', () => {
  assert.equal(answers({ jsonrpc: '2.0', id: 1, result: {} }, 1, true), true);
  assert.equal(answers({ jsonrpc: '2.0', id: 1, error: { code: -32603, message: 'x' } }, 1, true), true);
  assert.equal(answers({ jsonrpc: '2.0', id: 2, result: {} }, 1, false), false, 'another request');
  assert.equal(answers({ jsonrpc: '2.0', id: 1, method: 'elicitation/create', params: {} }, 1, false), false, "a server's request under the same id");
  assert.equal(answers({ jsonrpc: '2.0', id: 1 }, 1, true), false, 'neither a result nor an error: not an answer to the edge');
  assert.equal(answers({ jsonrpc: '2.0', id: 1 }, 1, false), true, 'but the audit records it');
  assert.equal(answers(null, 1, false), false);
  assert.equal(answers([{ id: 1 }], 1, false), false, 'a batch is not a response');
  const reading = WholeSse.read(PROGRESS + 'data: {"jsonrpc":"2.0","id":1}\n\n' + ANSWER);
  assert.equal(reading.answerAt(1, false), 1);
  assert.equal(reading.answerAt(1, true), 2);
  assert.equal(reading.answerAt(7, false), -1);
});

test('a body keeps its reading; a replaced answer event comes with a reading equal to a fresh one of the new bytes', async () => {
  const body = RelayBody.of(Buffer.from(PROGRESS + ANSWER));
  const reading = body.peekWholeSse();
  assert.ok(reading !== undefined);
  assert.equal(body.peekWholeSse(), reading, 'read once');
  const written = { jsonrpc: '2.0', id: 1, result: { content: [], isError: true, _meta: { 'dev.gatehouse/run_id': 'r' } } };
  const raw = `id: ev-2\nevent: message\ndata: ${JSON.stringify(written)}\n\n`;
  const next = reading.replacing(1, raw, written);
  const fresh = WholeSse.read(PROGRESS + raw);
  assert.deepEqual(next.events, fresh.events);
  assert.deepEqual([next.message(0), next.message(1)], [fresh.message(0), fresh.message(1)]);
  assert.equal(reading.events[1]!.raw, ANSWER, 'the first reading is left as it was');
  body.dump();
  assert.equal(body.peekWholeSse(), undefined, 'a consumed body has no whole to read');
});

test('the pass-through, the audit and the edge read a short answer with one parse of its JSON', async () => {
  const ctx = { kind: 'request', message: { jsonrpc: '2.0', id: 1, method: 'tools/call' }, era: 'legacy', callId: 'c1' } as unknown as CallContext;
  const body = RelayBody.of(Buffer.from(PROGRESS + ANSWER));
  const outcome: Outcome = { kind: 'relay', status: 200, headers: { 'content-type': 'text/event-stream' }, body, requestId: 1, upstream: 'u', failureOf: () => new GatewayError('GW_ERR_UPSTREAM_UNREACHABLE', 'x') };
  let server: Server | undefined;
  const parse = JSON.parse;
  let parses = 0;
  JSON.parse = ((text: string, reviver?: (k: string, v: unknown) => unknown) => {
    // Only the answer's own text counts (the HTTP client parses its options the same way).
    if (String(text).includes('"result"')) parses++;
    return parse(text, reviver);
  }) as typeof JSON.parse;
  try {
    // The legacy pass-through: the answer is in it, so no resuming reader.
    assert.equal(answeredWhole(body.peekWholeSse()!, 1), true);
    // The audit: the answer is seen, and gets its run id.
    const audited = (await interceptFinal(outcome, ctx, async () => ({ meta: { 'dev.gatehouse/run_id': 'r' } }))) as Extract<Outcome, { kind: 'relay' }>;
    assert.equal(audited.kind, 'relay');
    // The edge: the relay's summary says the tool failed (isError), from the same reading.
    const relayedBody = audited.body;
    let summary: { toolError: boolean } | undefined;
    let written = '';
    server = createServer((_req, res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      summary = relayWholeSse(relayedBody.peekWhole()!, relayedBody.peekWholeSse()!, res, { callId: 'c1', era: 'legacy', id: 1, requestId: 1, upstream: 'u', cancel: new Cancellation(), failureOf: outcome.failureOf });
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const res = await request(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    written = await res.body.text();
    JSON.parse = parse;
    assert.equal(parses, 1, 'the answer event parsed once, by whichever step asked first');
    assert.equal(summary?.toolError, true);
    assert.match(written, /"dev\.gatehouse\/run_id":"r"/);
    assert.ok(written.startsWith(PROGRESS), 'the progress event as it came');
  } finally {
    JSON.parse = parse;
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  }
});
