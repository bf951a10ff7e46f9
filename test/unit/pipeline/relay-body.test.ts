// A relayed body and a call's cancellation: the two pieces the pass-through uses instead of a Readable and
// an AbortController per call (issue 17). What the edge relies on: nothing is lost between the upstream's
// headers and the consumer's arrival, backpressure reaches the source, a dropped body stops its source, and
// a cancellation reaches both its callbacks and a signal made late.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { Cancellation } from '../../../src/pipeline/cancellation.js';
import { BodyDropped, BodyTooLarge, MAX_WHOLE_BODY_BYTES, RelayBody, type BodySource } from '../../../src/pipeline/relay-body.js';

function source(): BodySource & { log: string[] } {
  const log: string[] = [];
  return { log, pause: () => log.push('pause'), resume: () => log.push('resume'), abort: (reason) => log.push(`abort:${reason.message}`) };
}

test('chunks that come before the consumer are held and delivered first, then the end', () => {
  const src = source();
  const body = new RelayBody(src);
  body.push(Buffer.from('{"a":'));
  body.push(Buffer.from('1}'));
  body.end();
  const got: string[] = [];
  let ended = false;
  body.consume({ data: (c) => (got.push(c.toString()), true), end: () => (ended = true), error: () => assert.fail('no error') });
  assert.deepEqual(got, ['{"a":', '1}']);
  assert.equal(ended, true);
  assert.throws(() => body.consume({ data: () => true, end() {}, error() {} }), /one consumer/);
});

test('a full sink pauses the source; resume() lets it go on', () => {
  const src = source();
  const body = new RelayBody(src);
  let room = false;
  body.consume({ data: () => room, end() {}, error() {} });
  body.push(Buffer.from('x'));
  assert.deepEqual(src.log, ['resume', 'pause']);
  room = true;
  body.resume();
  body.push(Buffer.from('y'));
  assert.deepEqual(src.log, ['resume', 'pause', 'resume']);
});

test('a failure reaches the consumer, even one that comes after it', () => {
  const body = new RelayBody(source());
  body.push(Buffer.from('partial'));
  body.fail(new Error('socket hang up'));
  const got: string[] = [];
  let failed: Error | undefined;
  body.consume({ data: (c) => (got.push(c.toString()), true), end: () => assert.fail('no end'), error: (e) => (failed = e) });
  assert.deepEqual(got, ['partial']);
  assert.equal(failed?.message, 'socket hang up');
});

test('a dropped body aborts its source once, tells its consumer once (BodyDropped), and what the source says after that is ignored', () => {
  const src = source();
  const body = new RelayBody(src);
  const events: string[] = [];
  body.consume({ data: () => (events.push('data'), true), end: () => events.push('end'), error: (e) => events.push(`error:${e.name}`) });
  body.destroy();
  body.destroy();
  body.push(Buffer.from('late'));
  body.fail(new Error('aborted'));
  body.end();
  assert.deepEqual(events, ['error:BodyDropped']);
  assert.deepEqual(src.log, ['resume', 'abort:the relayed body was dropped']);
});

test('a body dropped while read through its view: the reader\'s loop ends with BodyDropped, and nothing is thrown out of the process', async () => {
  // Until 5 December a dropped body told its view nothing, and a loop reading the view waited for good (the
  // legacy SSE edge's relays, pipeOutcome's).
  const uncaught: unknown[] = [];
  const record = (err: unknown): void => void uncaught.push(err);
  process.on('uncaughtException', record);
  try {
    const src = source();
    const body = new RelayBody(src);
    const view = body.readable();
    body.push(Buffer.from('data: 1\n\n'));
    const got: string[] = [];
    const reading = (async () => {
      for await (const chunk of view) {
        got.push(String(chunk));
        body.destroy();
      }
    })();
    await assert.rejects(reading, BodyDropped);
    assert.deepEqual(got, ['data: 1\n\n']);
    assert.equal(view.destroyed, true);
    assert.deepEqual(src.log.filter((l) => l.startsWith('abort')), ['abort:the relayed body was dropped']);
    // A view not read yet learns it when its reader comes.
    const later = new RelayBody(source());
    const unread = later.readable();
    later.destroy();
    await new Promise((r) => setImmediate(r));
    await assert.rejects(async () => {
      for await (const _ of unread) void _;
    }, BodyDropped);
    assert.deepEqual(uncaught, []);
  } finally {
    process.off('uncaughtException', record);
  }
});

test('a body dropped while collect() waits for it: collect rejects with BodyDropped', async () => {
  const src = source();
  const body = new RelayBody(src);
  const whole = body.collect();
  body.push(Buffer.from('{"jsonrpc":'));
  body.destroy();
  await assert.rejects(whole, BodyDropped);
  assert.deepEqual(src.log, ['resume', 'abort:the relayed body was dropped']);
});

test('collect() gives the whole body; of() is a body already complete', async () => {
  const body = new RelayBody(source());
  const whole = body.collect();
  body.push(Buffer.from('ab'));
  body.push(Buffer.from('cd'));
  body.end();
  assert.equal((await whole).toString(), 'abcd');
  assert.equal((await RelayBody.of(Buffer.from('fixed')).collect()).toString(), 'fixed');
});

test('collect() past its bound: BodyTooLarge, the source stopped and nothing held; a body already whole past it too', async () => {
  const src = source();
  const body = new RelayBody(src);
  const whole = body.collect(5);
  body.push(Buffer.from('abc'));
  body.push(Buffer.from('de'));
  body.push(Buffer.from('f'));
  body.push(Buffer.from('never held'));
  body.end();
  await assert.rejects(whole, (err: unknown) => err instanceof BodyTooLarge && err.maxBytes === 5 && /larger than 5 bytes/.test(err.message));
  assert.deepEqual(src.log, ['resume', 'abort:sent a response body larger than 5 bytes']);
  assert.equal(body.settled, true);

  // All of it came before anyone read it: nothing to stop, and still refused rather than given empty.
  const held = new RelayBody(source());
  held.push(Buffer.from('abcdef'));
  held.end();
  await assert.rejects(held.collect(5), BodyTooLarge);
  // Exactly at the bound is whole.
  assert.equal((await RelayBody.of(Buffer.from('abcde')).collect(5)).toString(), 'abcde');
});

test("the bound is the body's own (the upstream's maxMessageBytes), MAX_WHOLE_BODY_BYTES unless given; a body made of bytes already held has none", async () => {
  const atDefault = new RelayBody(source());
  assert.equal(atDefault.maxMessageBytes, MAX_WHOLE_BODY_BYTES);
  const whole = atDefault.collect();
  atDefault.push(Buffer.alloc(MAX_WHOLE_BODY_BYTES, 'a'));
  atDefault.push(Buffer.from('b'));
  await assert.rejects(whole, BodyTooLarge);

  const raised = new RelayBody(source(), MAX_WHOLE_BODY_BYTES * 2);
  const more = raised.collect();
  raised.push(Buffer.alloc(MAX_WHOLE_BODY_BYTES + 1, 'a'));
  raised.end();
  assert.equal((await more).length, MAX_WHOLE_BODY_BYTES + 1);

  assert.equal(RelayBody.of(Buffer.from('x')).maxMessageBytes, Infinity);
  assert.equal((await RelayBody.of(Buffer.alloc(MAX_WHOLE_BODY_BYTES + 1, 'a')).collect()).length, MAX_WHOLE_BODY_BYTES + 1);
});

test('chunks held before anyone consumes the body are bounded too: past it the body fails and its source stops', async () => {
  const src = source();
  const body = new RelayBody(src, 5);
  body.push(Buffer.from('abc'));
  body.push(Buffer.from('def'));
  body.push(Buffer.from('never held'));
  assert.equal(body.settled, true);
  assert.equal(body.peekWhole(), undefined);
  assert.deepEqual(src.log, ['abort:sent a response body larger than 5 bytes']);
  let failed: unknown;
  body.consume({ data: () => assert.fail('nothing was kept'), end: () => assert.fail('no end'), error: (e) => (failed = e) });
  assert.ok(failed instanceof BodyTooLarge);
});

test('head(): at most the first bytes, and the rest is not read', async () => {
  const src = source();
  const body = new RelayBody(src);
  const start = body.head(5);
  body.push(Buffer.from('abc'));
  body.push(Buffer.from('defgh'));
  assert.equal((await start).toString(), 'abcde');
  assert.ok(src.log.includes('abort:the relayed body was dropped'), src.log.join());
  const short = RelayBody.of(Buffer.from('ab'));
  assert.equal((await short.head(5)).toString(), 'ab');
});

test('readable(): the body as a stream, with backpressure and destroy reaching the source', async () => {
  const src = source();
  const body = new RelayBody(src);
  const view = body.readable();
  body.push(Buffer.from('one '));
  body.push(Buffer.from('two'));
  body.end();
  const chunks: string[] = [];
  for await (const c of view) chunks.push(String(c));
  assert.equal(chunks.join(''), 'one two');

  const src2 = source();
  const body2 = new RelayBody(src2);
  const view2 = body2.readable();
  view2.destroy();
  assert.ok(src2.log.includes('abort:the relayed body was dropped'), src2.log.join());
});

test('readable(): a body that fails before its reader begins does not throw out of the process; the reader gets the failure', async () => {
  // The pass-through hands the view to an async generator that starts at its first `next`; a client that
  // leaves before then aborts the upstream request, and the body fails with nobody reading yet. Before the
  // fix this destroyed the view with an error no one listened to, and the process exited (the edge fuzzer).
  const uncaught: unknown[] = [];
  const record = (err: unknown): void => void uncaught.push(err);
  process.on('uncaughtException', record);
  try {
    const body = new RelayBody(source());
    const view = body.readable();
    body.push(Buffer.from('event: message\n'));
    body.fail(new Error('Request aborted'));
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(uncaught, []);
    assert.equal(view.errored?.message, 'Request aborted');
    // A reader that comes later learns of it.
    await assert.rejects(async () => {
      for await (const _ of view) void _;
    }, /Request aborted/);
  } finally {
    process.off('uncaughtException', record);
  }
});

test('fromReadable(): any stream as a body; one that closes before its end is a failure', async () => {
  const ok = RelayBody.fromReadable(Readable.from([Buffer.from('a'), Buffer.from('b')]));
  assert.equal((await ok.collect()).toString(), 'ab');

  const cut = new Readable({ read() {} });
  const body = RelayBody.fromReadable(cut);
  const whole = body.collect();
  cut.push('half');
  cut.destroy();
  await assert.rejects(whole, /closed the response before its end/);
});

test('Cancellation: callbacks run once on cancel, forgotten ones do not; a signal made late is already aborted', () => {
  const cancel = new Cancellation();
  const calls: string[] = [];
  const forgotten = (): number => calls.push('forgotten');
  cancel.onCancel(() => calls.push('a'));
  cancel.onCancel(forgotten);
  cancel.offCancel(forgotten);
  assert.equal(cancel.aborted, false);
  const early = cancel.signal;
  cancel.cancel();
  cancel.cancel();
  assert.deepEqual(calls, ['a']);
  assert.equal(cancel.aborted, true);
  assert.equal(early.aborted, true);

  const late = new Cancellation();
  late.cancel();
  assert.equal(late.signal.aborted, true, 'the signal of a call already cancelled');
});

test('Cancellation following an outer signal (an HTTP+SSE session): aborted with it, callbacks through it', () => {
  const session = new AbortController();
  const cancel = new Cancellation(session.signal);
  const calls: string[] = [];
  cancel.onCancel(() => calls.push('gone'));
  assert.equal(cancel.signal, session.signal);
  session.abort();
  assert.equal(cancel.aborted, true);
  assert.deepEqual(calls, ['gone']);
});

test('Cancellation.linkedWith: cancelled by either side; once disposed, neither reaches it', () => {
  const call = new Cancellation();
  const request = new Cancellation();
  const first = request.linkedWith(call);
  call.cancel();
  assert.equal(first.cancel.aborted, true, 'the client leaving cancels the upstream request');

  const session = new Cancellation();
  const other = new Cancellation();
  const second = session.linkedWith(other);
  second.dispose();
  session.cancel();
  assert.equal(second.cancel.aborted, false, 'a disposed link is forgotten');

  const gone = new Cancellation();
  gone.cancel();
  assert.equal(gone.linkedWith(new Cancellation()).cancel.aborted, true, 'linked to one already cancelled');
});

test('a body that came whole, in one chunk, goes to a sink that takes it whole in one call; otherwise chunk by chunk', () => {
  const calls: string[] = [];
  const sink = { data: (c: Buffer) => (calls.push(`data:${c}`), true), end: () => calls.push('end'), error: () => calls.push('error'), whole: (c: Buffer) => calls.push(`whole:${c}`) };
  RelayBody.of(Buffer.from('{"a":1}')).consume(sink);
  assert.deepEqual(calls, ['whole:{"a":1}']);
  // Two chunks, or a body still open, are not whole: data and end as before.
  calls.length = 0;
  const two = new RelayBody(source());
  two.push(Buffer.from('{"a":'));
  two.push(Buffer.from('1}'));
  two.end();
  two.consume(sink);
  assert.deepEqual(calls, ['data:{"a":', 'data:1}', 'end']);
  calls.length = 0;
  const open = new RelayBody(source());
  open.push(Buffer.from('{"a":1}'));
  open.consume(sink);
  open.end();
  assert.deepEqual(calls, ['data:{"a":1}', 'end']);
  // A sink without `whole` gets data and end.
  const plain: string[] = [];
  RelayBody.of(Buffer.from('x')).consume({ data: (c) => (plain.push(`data:${c}`), true), end: () => plain.push('end'), error: () => plain.push('error') });
  assert.deepEqual(plain, ['data:x', 'end']);
});

test('peekWhole(): a body that has all come, in one chunk or several (joined once), without consuming it; undefined while it is open', () => {
  const body = new RelayBody({ pause() {}, resume() {}, abort() {} });
  body.push(Buffer.from('event: message\n'));
  assert.equal(body.peekWhole(), undefined, 'still open');
  body.push(Buffer.from('data: {}\n\n'));
  body.end();
  const whole = body.peekWhole();
  assert.equal(whole?.toString(), 'event: message\ndata: {}\n\n');
  assert.equal(body.peekWhole(), whole, 'joined once, the same buffer after');
  // Still unconsumed: its consumer gets it, whole.
  let got: Buffer | undefined;
  body.consume({ data: () => true, end() {}, error() {}, whole: (chunk) => void (got = chunk) });
  assert.equal(got, whole);
});

test('endsWithin(): resolves at the end, or after the wait if the body is still open; the body stays unconsumed', async (t) => {
  // The wait's clock is mocked: what ends each wait is checked (the end, or the timer), not how long it took.
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const ending = new RelayBody({ pause() {}, resume() {}, abort() {} });
  const waited = ending.endsWithin(10_000);
  ending.push(Buffer.from('a'));
  ending.end();
  // Causal, not timed: the end settles the wait before the event loop turns (setImmediate), where the
  // 10 s timer could not have fired.
  const first = await Promise.race([waited.then(() => 'ended'), new Promise((r) => setImmediate(r, 'the loop turned first'))]);
  assert.equal(first, 'ended', 'resolved by the end, not the wait');
  assert.equal(ending.peekWhole()?.toString(), 'a');
  const open = new RelayBody({ pause() {}, resume() {}, abort() {} });
  let waitedOut = false;
  const waiting = open.endsWithin(30).then(() => (waitedOut = true));
  t.mock.timers.tick(29);
  await new Promise((r) => setImmediate(r));
  assert.equal(waitedOut, false, 'still waiting short of the 30 ms');
  t.mock.timers.tick(1);
  for (let i = 0; i < 20 && !waitedOut; i++) await new Promise((r) => setImmediate(r));
  assert.equal(waitedOut, true, 'the wait ends at 30 ms with the body still open');
  await waiting;
  assert.equal(open.settled, false);
  open.push(Buffer.from('later'));
  open.end();
  assert.equal((await open.collect()).toString(), 'later');
  await RelayBody.of(Buffer.from('x')).endsWithin(10_000);
});
