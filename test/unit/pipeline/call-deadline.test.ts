// CallDeadlines (src/pipeline/call-deadline.ts): an answer still coming at its deadline is cut; one that is
// complete is never watched; one that ends in time is forgotten (cancellation.mdx §Timeouts: a maximum
// timeout regardless of progress).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CallDeadlines, callTimedOut } from '../../../src/pipeline/call-deadline.js';
import { CallStream } from '../../../src/pipeline/call-stream.js';
import type { Outcome } from '../../../src/pipeline/outcome.js';
import { RelayBody } from '../../../src/pipeline/relay-body.js';
import { GatewayError } from '../../../src/errors.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The deadlines' clock is unref'd (it must not keep a gateway alive): a test keeps the loop up itself. */
function held(fn: () => Promise<void>): () => Promise<void> {
  return async () => {
    const alive = setInterval(() => {}, 1_000);
    try {
      await fn();
    } finally {
      clearInterval(alive);
    }
  };
}
const relay = (body: RelayBody): Outcome => ({ kind: 'relay', status: 200, headers: {}, body, requestId: 1, upstream: 'u', failureOf: () => new GatewayError('GW_ERR_UPSTREAM_UNREACHABLE', 'x') });

test('a relayed body still open at its deadline fails with the timeout, and its source is stopped', held(async () => {
  const deadlines = new CallDeadlines(10);
  let aborted: Error | undefined;
  const body = new RelayBody({ pause() {}, resume() {}, abort: (err) => void (aborted = err) });
  deadlines.bound(relay(body), performance.now() + 30, () => callTimedOut('u', 30));
  const failed = new Promise<Error>((resolve) => body.consume({ data: () => true, end: () => assert.fail('ended'), error: resolve }));
  assert.equal(deadlines.size, 1);
  const err = (await failed) as GatewayError;
  assert.equal(err.code, 'GW_ERR_UPSTREAM_TIMEOUT');
  assert.equal(aborted, err);
  assert.equal(deadlines.size, 0);
}));

test('a body complete when seen is never watched; one that ends in time is forgotten and left alone', held(async () => {
  const deadlines = new CallDeadlines(10);
  deadlines.bound(relay(RelayBody.of(Buffer.from('{}'))), performance.now() + 1, () => callTimedOut('u', 1));
  assert.equal(deadlines.size, 0);
  const body = new RelayBody({ pause() {}, resume() {}, abort: () => assert.fail('aborted') });
  deadlines.bound(relay(body), performance.now() + 40, () => callTimedOut('u', 40));
  assert.equal(deadlines.size, 1);
  body.push(Buffer.from('{}'));
  body.end();
  assert.equal(deadlines.size, 0);
  await sleep(80);
  assert.equal((await body.collect()).toString(), '{}');
}));

test('a call stream still open at its deadline gets the timeout as its answer; a listen is never watched', held(async () => {
  const deadlines = new CallDeadlines(10);
  const stream = new CallStream({ requestId: 1, mode: 'call', acceptsSse: true });
  let closed = false;
  stream.onClose(() => (closed = true));
  deadlines.bound({ kind: 'stream', stream }, performance.now() + 30, () => callTimedOut('u', 30));
  stream.push({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 't', progress: 1 } });
  const items = [];
  for await (const item of stream.read()) items.push(item);
  assert.equal(items.length, 2);
  assert.equal((items[1] as { failure: GatewayError }).failure.code, 'GW_ERR_UPSTREAM_TIMEOUT');
  assert.equal(closed, true, 'the producer hears the stream close, and stops the upstream call');
  const listen = new CallStream({ requestId: null, mode: 'listen', acceptsSse: true });
  deadlines.bound({ kind: 'stream', stream: listen }, performance.now(), () => callTimedOut('u', 0));
  assert.equal(deadlines.size, 0);
}));
