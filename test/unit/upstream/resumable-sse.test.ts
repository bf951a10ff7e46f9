// readSseMessages: the rules of taking a closed SSE stream up again, with scripted streams and a scripted
// reopen (2025-11-25/basic/transports.mdx §Sending Messages 6, §Resumability and Redelivery; WHATWG HTML
// §9.2.6 for `id` and `retry`). The real server is in test/integration/sse-resume.test.ts.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { GatewayError } from '../../../src/errors.js';
import { Cancellation } from '../../../src/pipeline/cancellation.js';
import { UpstreamSessionGone } from '../../../src/pipeline/ports.js';
import { answeredWhole, readSseMessages, type StreamResumption } from '../../../src/upstream/resumable-sse.js';
import { WholeSse } from '../../../src/protocol/whole-sse.js';

const msg = (m: object, id?: string): string => `${id !== undefined ? `id: ${id}\n` : ''}data: ${JSON.stringify(m)}\n\n`;
const stream = (...events: string[]): Readable => Readable.from(events.map((e) => Buffer.from(e)));

interface Reopen {
  lastEventId: string;
}

/** A resumption whose reopens answer, in turn, from `script` (a stream, or an error to throw). */
function scripted(script: Array<Readable | Error>, opts: Partial<StreamResumption> = {}): { resumption: StreamResumption; reopens: Reopen[] } {
  const reopens: Reopen[] = [];
  const resumption: StreamResumption = {
    awaiting: 1,
    cancel: new Cancellation(),
    idleLimitMs: 60_000,
    ...opts,
    reopen: async (lastEventId) => {
      reopens.push({ lastEventId });
      const next = script.shift();
      if (next === undefined) throw new Error('reopened more often than scripted');
      if (next instanceof Error) throw next;
      return next;
    },
  };
  return { resumption, reopens };
}

async function collect(gen: AsyncGenerator<unknown>): Promise<{ messages: unknown[]; error?: unknown }> {
  const messages: unknown[] = [];
  try {
    for await (const m of gen) messages.push(m);
  } catch (error) {
    return { messages, error };
  }
  return { messages };
}

/** Turns of the event loop (setImmediate is not mocked): a stream's end and a reopen's answer run in them. */
async function turns(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
}

test('a reply stream closed before its response resumes after `retry` from the last event id, until the response', async (t) => {
  const { resumption, reopens } = scripted([
    stream(msg({ jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1 } }, 'e-2')),
    stream(msg({ jsonrpc: '2.0', id: 1, result: { ok: true } }, 'e-3')),
  ]);
  // §Sending Messages 6: the client MUST wait the `retry` the server sent before reconnecting. On a mocked
  // clock: each reopen comes when the server's 80 ms are over, and not a tick before.
  t.mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const reading = collect(readSseMessages(stream('id: e-1\nretry: 80\ndata: \n\n'), 'up', resumption));
    for (let round = 1; round <= 2; round++) {
      await turns();
      t.mock.timers.tick(79);
      await turns();
      assert.equal(reopens.length, round - 1, `reconnect ${round} came before the server's retry (80 ms)`);
      t.mock.timers.tick(1);
      await turns();
      assert.equal(reopens.length, round, `reconnect ${round} did not come once the server's retry was over`);
    }
    const { messages, error } = await reading;
    assert.equal(error, undefined);
    assert.deepEqual(messages, [{ jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1 } }, { jsonrpc: '2.0', id: 1, result: { ok: true } }]);
    assert.deepEqual(reopens.map((r) => r.lastEventId), ['e-1', 'e-2']);
  } finally {
    t.mock.timers.reset();
  }
});

test('a stream that answered, or never carried an event id, is not resumed', async () => {
  const answered = scripted([]);
  const a = await collect(readSseMessages(stream(msg({ jsonrpc: '2.0', id: 1, result: {} }, 'e-1')), 'up', answered.resumption));
  assert.equal(a.error, undefined);
  assert.equal(answered.reopens.length, 0);

  const anonymous = scripted([]);
  const b = await collect(readSseMessages(stream(msg({ jsonrpc: '2.0', method: 'notifications/message', params: {} })), 'up', anonymous.resumption));
  assert.equal(b.error, undefined, 'ends as before; the bridge reports the missing answer');
  assert.equal(anonymous.reopens.length, 0);

  // An empty id resets the last event id (WHATWG HTML §9.2.6): nothing to resume from.
  const reset = scripted([]);
  await collect(readSseMessages(stream('id: e-1\ndata: \n\n', 'id\ndata: \n\n'), 'up', reset.resumption));
  assert.equal(reset.reopens.length, 0);
});

test('connections that bring nothing double the wait; a refusal ends at once; failed connects are tried three times', async (t) => {
  // Two silent reconnects (open, then closed with not a byte), then the answer: waits of 50, 100 and 200 ms,
  // on a mocked clock, each reopen a tick after its wait and not before.
  const silent = scripted([stream(), stream(), stream(msg({ jsonrpc: '2.0', id: 1, result: {} }))]);
  t.mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const reading = collect(readSseMessages(stream('id: e-1\nretry: 50\ndata: \n\n'), 'up', silent.resumption));
    for (const [i, wait] of [50, 100, 200].entries()) {
      await turns();
      t.mock.timers.tick(wait - 1);
      await turns();
      assert.equal(silent.reopens.length, i, `reconnect ${i + 1} came before its wait of ${wait} ms`);
      t.mock.timers.tick(1);
      await turns();
      assert.equal(silent.reopens.length, i + 1, `reconnect ${i + 1} did not come after its wait of ${wait} ms`);
    }
    assert.equal((await reading).error, undefined);
  } finally {
    t.mock.timers.reset();
  }

  const refused = scripted([new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', 'refused to resume (HTTP 409)', 'up')]);
  const r = await collect(readSseMessages(stream('id: e-1\nretry: 10\ndata: \n\n'), 'up', refused.resumption));
  assert.equal((r.error as GatewayError).code, 'GW_ERR_UPSTREAM_BAD_RESPONSE');
  assert.equal(refused.reopens.length, 1, 'a status is the server\'s answer: not retried');

  const gone = scripted([new UpstreamSessionGone('up')]);
  const g = await collect(readSseMessages(stream('id: e-1\nretry: 10\ndata: \n\n'), 'up', gone.resumption));
  assert.ok(g.error instanceof UpstreamSessionGone);

  const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  const unreachable = scripted([down, down, down, down]);
  const u = await collect(readSseMessages(stream('id: e-1\nretry: 10\ndata: \n\n'), 'up', unreachable.resumption));
  assert.equal((u.error as GatewayError).code, 'GW_ERR_UPSTREAM_UNREACHABLE');
  assert.equal(unreachable.reopens.length, 3);
});

test('the idle limit counts across reconnects, and the reader leaving stops the wait at once', async () => {
  const quiet = scripted([stream(), stream(), stream(), stream()], { idleLimitMs: 120 });
  const q = await collect(readSseMessages(stream('id: e-1\nretry: 50\ndata: \n\n'), 'up', quiet.resumption));
  assert.equal((q.error as GatewayError).code, 'GW_ERR_UPSTREAM_TIMEOUT');
  assert.ok(quiet.reopens.length >= 1 && quiet.reopens.length <= 2, `gave up after the limit: ${quiet.reopens.length} reopens`);

  const cancel = new Cancellation();
  const leaving = scripted([], { cancel });
  // A retry of 60 s: the reader is in that wait when its reader leaves, and only the leaving can end it now.
  let settled = false;
  const reading = collect(readSseMessages(stream('id: e-1\nretry: 60000\ndata: \n\n'), 'up', leaving.resumption)).finally(() => (settled = true));
  await new Promise((r) => setTimeout(r, 30));
  cancel.cancel();
  // Counted in turns of the event loop, not in time: the cancellation itself must end the wait.
  for (let i = 0; i < 100 && !settled; i++) await new Promise((r) => setImmediate(r));
  assert.ok(settled, 'the wait for the 60 s retry went on after its reader left');
  const l = await reading;
  assert.equal(l.error, undefined);
  assert.equal(leaving.reopens.length, 0);
});

test('a GET stream (no request awaited) is resumed each time it closes, until its reader stops', async () => {
  const { resumption, reopens } = scripted(
    [stream(msg({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }, 'g-2')), stream(msg({ jsonrpc: '2.0', method: 'notifications/prompts/list_changed' }, 'g-3'))],
    { awaiting: undefined },
  );
  const gen = readSseMessages(stream('retry: 10\n', msg({ jsonrpc: '2.0', method: 'notifications/resources/list_changed' }, 'g-1')), 'up', resumption);
  const seen: string[] = [];
  for await (const m of gen) {
    seen.push((m as { method: string }).method);
    if (seen.length === 3) break;
  }
  assert.deepEqual(seen, ['notifications/resources/list_changed', 'notifications/tools/list_changed', 'notifications/prompts/list_changed']);
  assert.deepEqual(reopens.map((r) => r.lastEventId), ['g-1', 'g-2']);
});

// 2025-11-25/basic/transports.mdx §Listening for Messages 4 and §Sending Messages 6: a server that polls
// (closes its GET stream after each message) is come back to after its `retry` ("MUST respect"), else the
// client's own 1 s, every time: a connection that brought news calls for no longer wait. On a mocked clock,
// moved by hand: each reopen comes when the wait is over, and not a tick before.
test('a GET stream whose every connection brings news is come back to after the same wait each time: the server\'s retry, else 1 s', async (t) => {
  const news = (n: number): string => msg({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }, `g-${n}`);
  for (const { retry, waitMs } of [{ retry: undefined, waitMs: 1_000 }, { retry: 100, waitMs: 100 }]) {
    const { resumption, reopens } = scripted([stream(news(2)), stream(news(3)), stream(news(4)), stream(news(5))], { awaiting: undefined });
    t.mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const first = retry === undefined ? stream(news(1)) : stream(`retry: ${retry}\n`, news(1));
      const gen = readSseMessages(first, 'up', resumption);
      await gen.next();
      for (let round = 1; round <= 4; round++) {
        const next = gen.next();
        await turns();
        t.mock.timers.tick(waitMs - 1);
        await turns();
        assert.equal(reopens.length, round - 1, `retry ${retry}: round ${round} reopened before its ${waitMs} ms`);
        t.mock.timers.tick(1);
        await turns();
        assert.equal(reopens.length, round, `retry ${retry}: round ${round} not reopened after ${waitMs} ms: the wait grew`);
        assert.equal(reopens[round - 1]!.lastEventId, `g-${round}`);
        await next;
      }
      await gen.return();
    } finally {
      t.mock.timers.reset();
    }
  }
});

test('a stream that came whole with the response in it needs no resuming; one without it (a priming event, a notification) does', () => {
  const progress = 'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}\n\n';
  const answer = 'event: message\ndata: {"jsonrpc":"2.0","id":4,"result":{"content":[]}}\n\n';
  assert.equal(answeredWhole(WholeSse.read(progress + answer), 4), true);
  assert.equal(answeredWhole(WholeSse.read(progress + answer), 5), false, 'the response to another request');
  assert.equal(answeredWhole(WholeSse.read('id: p1\ndata: \n\n'), 4), false, 'a priming event only');
  assert.equal(answeredWhole(WholeSse.read(progress), 4), false);
  assert.equal(answeredWhole(WholeSse.read('data: {"id":4, not json}\n\n'), 4), false);
  assert.equal(answeredWhole(WholeSse.read('data: {"jsonrpc":"2.0","id":4,"method":"elicitation/create","params":{}}\n\n'), 4), false, "a server's request under the same id is not a response");
});
