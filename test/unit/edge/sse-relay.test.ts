// A relayed SSE answer that had all come before it was answered goes on in one write, read once for what
// the request's answer was (a tool error, an error code), with the same rules as the streaming relay: a
// stream that ends without the request's answer and without event ids to resume by gets an error event
// for the request (2025-11-25/basic/transports.mdx §Sending Messages; 2026-07-28 streamable-http.mdx).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { GatewayError } from '../../../src/errors.js';
import { Cancellation } from '../../../src/pipeline/cancellation.js';
import { relayWholeSse, type RelayContext } from '../../../src/edge/sse-relay.js';
import { WholeSse } from '../../../src/protocol/whole-sse.js';
import type { AnswerSummary } from '../../../src/edge/answer-summary.js';

let handler: (res: ServerResponse) => void = (res) => res.end();
const server = createServer((_req, res) => handler(res));
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
after(() => new Promise<void>((r) => server.close(() => r())));

const context = (warnings: string[] = []): RelayContext => ({
  era: 'legacy',
  id: 7,
  callId: 'c-1',
  requestId: 7,
  upstream: 'up',
  cancel: new Cancellation(),
  failureOf: (err) => new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', String(err)),
  log: { warn: (msg) => void warnings.push(msg) },
});

/** What a client receives when the relay is given `text` whole, and what the relay made of it. */
async function relayed(text: string, ctx = context()): Promise<{ body: string; summary: AnswerSummary | undefined }> {
  let summary: AnswerSummary | undefined;
  handler = (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    summary = relayWholeSse(Buffer.from(text), WholeSse.read(text), res, ctx);
    if (summary === undefined) res.end(': not relayed\n\n');
  };
  const res = await request(url);
  return { body: await res.body.text(), summary };
}

test('a whole stream with the answer goes on as it came, and its answer is read for the summary', async () => {
  const text = 'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}\n\nevent: message\ndata: {"jsonrpc":"2.0","id":7,"result":{"isError":true,"content":[]}}\n\n';
  const { body, summary } = await relayed(text);
  assert.equal(body, text);
  assert.deepEqual(summary, { toolError: true });
  const error = await relayed('data: {"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad"}}\n\n');
  assert.deepEqual(error.summary, { toolError: false, errorCode: -32602 });
});

test('a whole stream that ends without the answer and without event ids gets an error event for the request', async () => {
  const warnings: string[] = [];
  const text = 'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}\n\n';
  const { body, summary } = await relayed(text, context(warnings));
  assert.ok(body.startsWith(text), 'what came is passed on first');
  const last = JSON.parse(body.slice(text.length).split('\n').find((l) => l.startsWith('data: '))!.slice(6)) as { id: number; error: { data: { code: string } } };
  assert.equal(last.id, 7);
  assert.equal(last.error.data.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE');
  assert.equal(summary?.errorCode, (last.error as unknown as { code: number }).code);
  assert.deepEqual(warnings, ['upstream stream ended without a response']);
  // With an event id the client may resume it (2025-11-25 §Resumability): no error of Gatehouse's.
  const resumable = 'id: e1\ndata: \n\n';
  assert.equal((await relayed(resumable)).body, resumable);
});

test('a whole stream whose last event is cut short is left to the streaming relay (nothing written)', async () => {
  const { body, summary } = await relayed('data: {"jsonrpc":"2.0","id":7,"result":{}}\n\ndata: {"jsonrpc"');
  assert.equal(summary, undefined);
  assert.equal(body, ': not relayed\n\n');
});
