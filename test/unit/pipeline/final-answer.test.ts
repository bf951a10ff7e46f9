// The run id (and any other `_meta` entry an answer subscriber adds) reaches a relayed JSON answer by an
// insertion into the upstream's bytes: the rest of the body is left as it came, and the declared length
// follows. Where inserting is not safe, the answer is written again with the entries merged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { interceptFinal, withMetaInserted } from '../../../src/pipeline/final-answer.js';
import type { CallContext } from '../../../src/pipeline/context.js';
import type { JsonRpcResponse } from '../../../src/protocol/jsonrpc.js';
import type { Outcome } from '../../../src/pipeline/outcome.js';
import { RelayBody } from '../../../src/pipeline/relay-body.js';
import { GatewayError } from '../../../src/errors.js';

const ctx = { kind: 'request', message: { jsonrpc: '2.0', id: 1, method: 'tools/call' }, era: 'legacy', callId: 'c1' } as unknown as CallContext;
const META = { 'dev.gatehouse/run_id': 'run-1' };

function relayed(text: string): Outcome {
  const bytes = Buffer.from(text);
  return { kind: 'relay', status: 200, headers: { 'content-type': 'application/json', 'content-length': String(bytes.length) }, body: RelayBody.of(bytes), requestId: 1, upstream: 'u', failureOf: () => new GatewayError('GW_ERR_UPSTREAM_UNREACHABLE', 'x') };
}

async function run(text: string): Promise<{ outcome: Outcome; body: string }> {
  const outcome = await interceptFinal(relayed(text), ctx, async () => ({ meta: META }));
  if (outcome.kind === 'relay') return { outcome, body: (await outcome.body.collect()).toString('utf8') };
  assert.equal(outcome.kind, 'json');
  return { outcome, body: JSON.stringify((outcome as { message: unknown }).message) };
}

test("a relayed result gets the entries inserted into its bytes, the upstream's spacing and order kept", async () => {
  const text = '{"result": {"content": [{"type":"text","text":"hi"}], "isError": false},  "jsonrpc":"2.0", "id":1}';
  const { outcome, body } = await run(text);
  assert.equal(outcome.kind, 'relay', 'still the upstream bytes, not an answer written again');
  assert.equal(body, '{"result": {"_meta":{"dev.gatehouse/run_id":"run-1"},"content": [{"type":"text","text":"hi"}], "isError": false},  "jsonrpc":"2.0", "id":1}');
  assert.equal((outcome as { headers: Record<string, string> }).headers['content-length'], String(Buffer.byteLength(body)));
  assert.deepEqual(JSON.parse(body).result._meta, META);
});

test('an empty result object, and non-ASCII text before it, still give valid JSON of the right length', async () => {
  const { outcome, body } = await run('{"jsonrpc":"2.0","id":1,"x":"héllo ✓","result":{ }}');
  assert.equal(outcome.kind, 'relay');
  assert.deepEqual(JSON.parse(body), { jsonrpc: '2.0', id: 1, x: 'héllo ✓', result: { _meta: META } });
  assert.equal((outcome as { headers: Record<string, string> }).headers['content-length'], String(Buffer.byteLength(body)));
});

test("a result that has a _meta of its own gets the entries inserted as that _meta's first", async () => {
  const { outcome, body } = await run('{"jsonrpc":"2.0","id":1,"result":{"_meta": {"a":1} ,"content":[]}}');
  assert.equal(outcome.kind, 'relay', 'still the upstream bytes');
  assert.equal(body, '{"jsonrpc":"2.0","id":1,"result":{"_meta": {"dev.gatehouse/run_id":"run-1","a":1} ,"content":[]}}');
  assert.deepEqual(JSON.parse(body).result._meta, { a: 1, ...META });
  const empty = await run('{"jsonrpc":"2.0","id":1,"result":{"content":[],"_meta":{}}}');
  assert.equal(empty.outcome.kind, 'relay');
  assert.deepEqual(JSON.parse(empty.body).result._meta, META);
});

test('a result whose _meta already names an entry is written again, the entry merged over it', async () => {
  const { outcome, body } = await run('{"jsonrpc":"2.0","id":1,"result":{"_meta":{"a":1,"dev.gatehouse/run_id":"forged"},"content":[]}}');
  assert.equal(outcome.kind, 'json');
  assert.deepEqual(JSON.parse(body).result._meta, { a: 1, ...META });
});

test('inserting is declined where the result cannot be found for certain or is not an object', () => {
  const response = (result: unknown) => ({ jsonrpc: '2.0' as const, id: 1, result: result as Record<string, unknown> });
  assert.equal(withMetaInserted('{"result":{"a":1},"result":{"a":1},"id":1}', response({ a: 1 }), META), undefined, 'duplicate member');
  assert.equal(withMetaInserted('{"\\u0072esult":{"a":1},"id":1}', response({ a: 1 }), META), undefined, 'escaped key');
  assert.equal(withMetaInserted('{"result":[1],"id":1}', response([1]), META), undefined, 'an array');
  assert.equal(withMetaInserted('{"result":{"a":1},"id":1}', response({ a: 1 }), META, { 'content-encoding': 'gzip' }), undefined, 'an encoded body');
  const big = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'x'.repeat(70_000) }] } });
  assert.equal(withMetaInserted(big, JSON.parse(big), META), undefined, 'a large body is written again, which costs less than walking it');
  assert.deepEqual(JSON.parse(withMetaInserted(big, JSON.parse(big), META, {}, Infinity)!).result._meta, META, 'unless told to walk it (one too deep to write again)');
  const meta = (value: unknown, text: string) => withMetaInserted(text, response({ _meta: value }), META);
  assert.equal(meta([1], '{"result":{"_meta":[1]},"id":1}'), undefined, 'a _meta that is an array');
  assert.equal(meta(null, '{"result":{"_meta":null},"id":1}'), undefined, 'a _meta that is null');
  assert.equal(meta({ 'dev.gatehouse/run_id': 'x' }, '{"result":{"_meta":{"dev.gatehouse/run_id":"x"}},"id":1}'), undefined, 'a _meta naming an entry');
  assert.equal(meta({ a: 1 }, '{"result":{"\\u005fmeta":{"a":1}},"id":1}'), undefined, 'a _meta key written with an escape');
});

test('stages that look at one relayed answer in turn share one reading of it; the bytes still reach the client', async () => {
  const seen: unknown[] = [];
  const text = '{"jsonrpc":"2.0","id":1,"result":{"content":[]}}';
  const inner = await interceptFinal(relayed(text), ctx, async ({ response }) => void seen.push(response));
  const outer = await interceptFinal(inner, ctx, async ({ response }) => void seen.push(response));
  assert.equal(seen.length, 2);
  assert.equal(seen[0], seen[1], 'the same parsed object: the body was read and parsed once');
  assert.equal(outer.kind, 'relay');
  assert.equal((await (outer as { body: RelayBody }).body.collect()).toString('utf8'), text);
});

test('with a marker, a relayed answer without it passes unread, the very outcome; one with it is shown', async () => {
  const seen: unknown[] = [];
  const onFinal = async ({ response }: { response: unknown }) => void seen.push(response);
  const plain = relayed('{"jsonrpc":"2.0","id":1,"result":{"content":[]}}');
  assert.equal(interceptFinal(plain, ctx, onFinal, { marker: 'input_required' }), plain, 'not even a promise: the body is untouched');
  assert.equal((await (plain as { body: RelayBody }).body.collect()).toString('utf8'), '{"jsonrpc":"2.0","id":1,"result":{"content":[]}}');
  const asking = relayed('{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"s"}}');
  await interceptFinal(asking, ctx, onFinal, { marker: 'input_required' });
  assert.deepEqual(seen, [{ jsonrpc: '2.0', id: 1, result: { resultType: 'input_required', requestState: 's' } }]);
  // A refusal is Gatehouse's own answer: never shown under a marker.
  const refusal: Outcome = { kind: 'refused', refusal: { kind: 'failure', error: new GatewayError('GW_ERR_UPSTREAM_UNREACHABLE', 'x') } };
  assert.equal(interceptFinal(refusal, ctx, onFinal, { marker: 'input_required' }), refusal);
  assert.equal(seen.length, 1);
});

test('with a marker, a body that comes in pieces is read whole before it is judged, and passes on unchanged', async () => {
  const body = new RelayBody({ pause() {}, resume() {}, abort() {} });
  const outcome: Outcome = { kind: 'relay', status: 200, headers: { 'content-type': 'application/json' }, body, requestId: 1, upstream: 'u', failureOf: () => new GatewayError('GW_ERR_UPSTREAM_UNREACHABLE', 'x') };
  const seen: unknown[] = [];
  const pending = interceptFinal(outcome, ctx, async ({ response }) => void seen.push(response), { marker: 'input_required' });
  // The marker is split across the two chunks.
  body.push(Buffer.from('{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_req'));
  body.push(Buffer.from('uired","requestState":"s"}}'));
  body.end();
  await pending;
  assert.equal(seen.length, 1);
});

test('an SSE answer event written again (a run id added) keeps its event id, for a client that resumes after it', async () => {
  const events = 'id: ev-1\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}\n\nid: ev-2\ndata: {"jsonrpc":"2.0","id":1,"result":{"content":[]}}\n\n';
  const outcome: Outcome = { kind: 'relay', status: 200, headers: { 'content-type': 'text/event-stream' }, body: RelayBody.of(Buffer.from(events)), requestId: 1, upstream: 'u', failureOf: () => new GatewayError('GW_ERR_UPSTREAM_UNREACHABLE', 'x') };
  const out = await interceptFinal(outcome, ctx, async () => ({ meta: META }));
  const text = (await (out as { body: RelayBody }).body.collect()).toString('utf8');
  assert.match(text, /^id: ev-1\ndata: .*progress/, 'what precedes the answer passes as it came');
  const answer = text.slice(text.indexOf('\n\n') + 2);
  assert.match(answer, /^id: ev-2\n/);
  assert.deepEqual(JSON.parse(answer.slice(answer.indexOf('data: ') + 6)).result._meta, META);
});

const SSE_EVENTS = 'id: ev-1\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}\n\nid: ev-2\ndata: {"jsonrpc":"2.0","id":1,"result":{"content":[]}}\n\n';
const sseOutcome = (body: RelayBody): Outcome => ({ kind: 'relay', status: 200, headers: { 'content-type': 'text/event-stream', 'content-length': '999' }, body, requestId: 1, upstream: 'u', failureOf: () => new GatewayError('GW_ERR_UPSTREAM_UNREACHABLE', 'x') });

test('an SSE answer that came whole is handled without streaming it: the same outcome when nothing changes, the answer event replaced when it does', async () => {
  const seen: unknown[] = [];
  const same = sseOutcome(RelayBody.of(Buffer.from(SSE_EVENTS)));
  assert.equal(await interceptFinal(same, ctx, async ({ response }) => void seen.push(response)), same, 'nothing to change: the very outcome, its bytes unread by anyone else');
  assert.deepEqual(seen, [{ jsonrpc: '2.0', id: 1, result: { content: [] } }]);
  // A refusal in place of the answer (an output check, a record that could not be kept).
  const refused = await interceptFinal(sseOutcome(RelayBody.of(Buffer.from(SSE_EVENTS))), ctx, async () => ({ refusal: { kind: 'failure', error: new GatewayError('GW_ERR_STATE_UNAVAILABLE', 'no record') } }));
  assert.equal(refused.kind, 'relay');
  const { headers, body } = refused as { headers: Record<string, string>; body: RelayBody };
  assert.equal(headers['content-length'], undefined, 'a changed body declares no length');
  const text = (await body.collect()).toString('utf8');
  assert.ok(text.startsWith(SSE_EVENTS.slice(0, SSE_EVENTS.indexOf('\n\n') + 2)), 'the progress event as it came');
  const answer = JSON.parse(text.slice(text.lastIndexOf('data: ') + 6)) as { id: number; error: { data: { code: string } } };
  assert.equal(answer.id, 1);
  assert.equal(answer.error.data.code, 'GW_ERR_STATE_UNAVAILABLE');
  assert.match(text, /\nid: ev-2\n/, 'under the event id of the answer it replaced');
});

test('an SSE answer that comes in pieces, or whole without the response, is handled as a stream (the response is still seen, or the failure)', async () => {
  // In pieces: the body is not whole when it is intercepted.
  const body = new RelayBody({ pause() {}, resume() {}, abort() {} });
  const out = await interceptFinal(sseOutcome(body), ctx, async () => ({ meta: META }));
  const half = SSE_EVENTS.length / 2;
  body.push(Buffer.from(SSE_EVENTS.slice(0, half)));
  body.push(Buffer.from(SSE_EVENTS.slice(half)));
  body.end();
  const text = (await (out as { body: RelayBody }).body.collect()).toString('utf8');
  assert.deepEqual(JSON.parse(text.slice(text.lastIndexOf('data: ') + 6)).result._meta, META);
  // Whole, but without the response to the request: the streaming path reports the failure to onFinal.
  const failures: unknown[] = [];
  const noAnswer = await interceptFinal(sseOutcome(RelayBody.of(Buffer.from(SSE_EVENTS.slice(0, SSE_EVENTS.indexOf('\n\n') + 2)))), ctx, async (answer) => void failures.push(answer.failure?.code));
  await assert.rejects((noAnswer as { body: RelayBody }).body.collect());
  assert.deepEqual(failures, ['GW_ERR_UPSTREAM_BAD_RESPONSE']);
});

test('with a marker, an SSE answer that came whole without it passes unread, the very outcome', async () => {
  const outcome = sseOutcome(RelayBody.of(Buffer.from(SSE_EVENTS)));
  let shown = 0;
  assert.equal(await interceptFinal(outcome, ctx, async () => void shown++, { marker: 'input_required' }), outcome);
  assert.equal(shown, 0);
});

test("an SSE answer gets the run id inserted into the upstream's own event, whole or streamed: its id, its fields and its spacing kept", async () => {
  const answer = 'id: ev-2\r\nevent: message\r\nretry: 500\r\ndata:{"jsonrpc":"2.0",  "id":1, "result": {"content":[], "isError":false}}\r\n\r\n';
  const expected = answer.replace('"result": {', `"result": {"_meta":${JSON.stringify(META)},`);
  const progress = SSE_EVENTS.slice(0, SSE_EVENTS.indexOf('\n\n') + 2);
  // Whole: the body goes on as one, with its reading for the edge.
  const whole = (await interceptFinal(sseOutcome(RelayBody.of(Buffer.from(progress + answer))), ctx, async () => ({ meta: META }))) as { body: RelayBody };
  assert.equal((await whole.body.collect()).toString('utf8'), progress + expected);
  // Streamed: the same event.
  const body = new RelayBody({ pause() {}, resume() {}, abort() {} });
  const streamed = (await interceptFinal(sseOutcome(body), ctx, async () => ({ meta: META }))) as { body: RelayBody };
  body.push(Buffer.from(progress + answer.slice(0, 30)));
  body.push(Buffer.from(answer.slice(30)));
  body.end();
  assert.equal((await streamed.body.collect()).toString('utf8'), progress + expected);
});

test('an SSE answer whose data spans lines is written again under its event id; one whose result has a _meta gets the entries inserted', async () => {
  const twoLines = 'id: ev-9\ndata: {"jsonrpc":"2.0","id":1,\ndata: "result":{"content":[]}}\n\n';
  const hasMeta = 'id: ev-9\ndata: {"jsonrpc":"2.0","id":1,"result":{"content":[],"_meta":{"x":1}}}\n\n';
  for (const [event, meta] of [[twoLines, META], [hasMeta, { x: 1, ...META }]] as const) {
    const out = (await interceptFinal(sseOutcome(RelayBody.of(Buffer.from(event))), ctx, async () => ({ meta: META }))) as { body: RelayBody };
    const text = (await out.body.collect()).toString('utf8');
    assert.ok(text.startsWith(event === twoLines ? 'id: ev-9\nevent: message\ndata: ' : 'id: ev-9\ndata: '), text);
    assert.deepEqual(JSON.parse(text.slice(text.indexOf('data: ') + 6)).result._meta, meta);
  }
});

test("a streamed SSE answer's failure that cannot be recorded reaches the client as the refusal onFinal gave, as the JSON path's does", async () => {
  const progress = SSE_EVENTS.slice(0, SSE_EVENTS.indexOf('\n\n') + 2);
  const unrecorded = async (): Promise<{ refusal: { kind: 'failure'; error: GatewayError } }> => ({ refusal: { kind: 'failure', error: new GatewayError('GW_ERR_STATE_UNAVAILABLE', 'no record') } });
  // The stream ends without the response (told on its flush), and the stream breaks (told on its error).
  for (const ending of ['ends', 'breaks'] as const) {
    const body = new RelayBody({ pause() {}, resume() {}, abort() {} });
    const out = (await interceptFinal(sseOutcome(body), ctx, unrecorded)) as { body: RelayBody };
    body.push(Buffer.from(progress));
    if (ending === 'ends') body.end();
    else body.fail(new Error('socket hang up'));
    await assert.rejects(out.body.collect(), (err: unknown) => {
      assert.equal((err as GatewayError).code, 'GW_ERR_STATE_UNAVAILABLE', `stream ${ending}: the record's failure, not the upstream's`);
      return true;
    });
  }
  // A refusal of another kind goes as an answer event for the request, and the stream ends.
  for (const ending of ['ends', 'breaks'] as const) {
    const told: unknown[] = [];
    const body = new RelayBody({ pause() {}, resume() {}, abort() {} });
    const out = (await interceptFinal(sseOutcome(body), ctx, async (answer) => {
      told.push(answer.failure?.code);
      return { refusal: { kind: 'tool' as const, code: 'invalid_output' as const, message: 'not now' } };
    })) as { body: RelayBody };
    body.push(Buffer.from(progress));
    if (ending === 'ends') body.end();
    else body.fail(new Error('socket hang up'));
    const text = (await out.body.collect()).toString('utf8');
    assert.ok(text.startsWith(progress), ending);
    const answer = JSON.parse(text.slice(text.lastIndexOf('data: ') + 6)) as { id: number; result: { isError: boolean; structuredContent: { error: { code: string } } } };
    assert.equal(answer.id, 1);
    assert.equal(answer.result.isError, true);
    assert.equal(answer.result.structuredContent.error.code, 'invalid_output');
    assert.deepEqual(told, [ending === 'ends' ? 'GW_ERR_UPSTREAM_BAD_RESPONSE' : 'GW_ERR_UPSTREAM_UNREACHABLE'], 'told once');
  }
});

test('a check of a streamed answer that throws fails that call with a generic failure; nothing is left unhandled', async () => {
  const { CallStream } = await import('../../../src/pipeline/call-stream.js');
  const source = new CallStream({ requestId: 1, mode: 'call', acceptsSse: true });
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
  const warnings: Error[] = [];
  const onWarning = (w: Error): void => void warnings.push(w);
  process.on('unhandledRejection', onUnhandled);
  process.on('warning', onWarning);
  try {
    const outcome = await interceptFinal({ kind: 'stream', stream: source }, ctx, async () => {
      throw new Error('internal: /srv/secret');
    });
    assert.equal(outcome.kind, 'stream');
    source.finish({ jsonrpc: '2.0', id: 1, result: { content: [] } });
    const items = [];
    for await (const item of (outcome as { stream: InstanceType<typeof CallStream> }).stream.read()) items.push(item);
    const last = items.at(-1) as { failure?: GatewayError };
    assert.ok(last.failure instanceof GatewayError, JSON.stringify(items));
    assert.doesNotMatch(last.failure.message, /secret/);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(unhandled, []);
    assert.ok(warnings.some((w) => w.name === 'GatehouseAnswerCheckError' && /secret/.test(w.message)), 'the error is told to the operator');
  } finally {
    process.off('unhandledRejection', onUnhandled);
    process.off('warning', onWarning);
  }
});

test('an answer held as an object too deep to write is the upstream failure before onFinal sees it; with a marker it is not shown', async () => {
  const deep = JSON.parse(`{"jsonrpc":"2.0","id":1,"result":{"rows":${'['.repeat(50_000)}${']'.repeat(50_000)}}}`) as JsonRpcResponse;
  const seen: Array<{ failure?: GatewayError }> = [];
  const out = await interceptFinal({ kind: 'json', status: 200, message: deep }, ctx, async (answer) => void seen.push(answer));
  assert.equal(seen.length, 1);
  assert.equal(seen[0]!.failure?.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE');
  assert.match(seen[0]!.failure!.message, /nested too deeply/);
  assert.equal(out.kind, 'refused');
  const marked = await interceptFinal({ kind: 'json', status: 200, message: deep }, ctx, async (answer) => void seen.push(answer), { marker: 'input_required' });
  assert.equal(seen.length, 1, 'not shown under a marker, as a relayed failure is not');
  assert.equal(marked.kind, 'refused');
  assert.equal((marked as { refusal: { kind: string; error: GatewayError } }).refusal.error.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE');
});

test('an answer held as an object (an adapter\'s JSON or stream) with both result and error, or neither, is the upstream failure before onFinal sees it', async () => {
  const { CallStream } = await import('../../../src/pipeline/call-stream.js');
  const wrong = [
    { jsonrpc: '2.0', id: 1, result: { content: [] }, error: { code: -32603, message: 'failed' } },
    { jsonrpc: '2.0', id: 1, result: { content: [] }, error: null },
    { jsonrpc: '2.0', id: 1 },
    { jsonrpc: '2.0', id: 1, error: 'failed' },
  ] as unknown as JsonRpcResponse[];
  for (const message of wrong) {
    const seen: Array<{ failure?: GatewayError }> = [];
    const out = await interceptFinal({ kind: 'json', status: 200, message }, ctx, async (answer) => void seen.push(answer));
    assert.equal(out.kind, 'refused', JSON.stringify(message));
    assert.equal(seen[0]?.failure?.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE', JSON.stringify(message));
    assert.match(seen[0]!.failure!.message, /exactly one of result and error/);

    const source = new CallStream({ requestId: 1, mode: 'call', acceptsSse: true });
    const streamed: Array<{ failure?: GatewayError }> = [];
    const outcome = await interceptFinal({ kind: 'stream', stream: source }, ctx, async (answer) => void streamed.push(answer));
    source.finish(message);
    const items = [];
    for await (const item of (outcome as { stream: InstanceType<typeof CallStream> }).stream.read()) items.push(item);
    assert.equal(streamed[0]?.failure?.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE', JSON.stringify(message));
    assert.ok((items.at(-1) as { failure?: GatewayError }).failure instanceof GatewayError, JSON.stringify(items));
  }
  // A well-formed answer of either kind is shown as it is.
  for (const message of [{ jsonrpc: '2.0', id: 1, result: {} }, { jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'bad' } }] as JsonRpcResponse[]) {
    const seen: Array<{ failure?: GatewayError }> = [];
    const out = await interceptFinal({ kind: 'json', status: 200, message }, ctx, async (answer) => void seen.push(answer));
    assert.equal(out.kind, 'json');
    assert.equal(seen[0]?.failure, undefined);
  }
});
