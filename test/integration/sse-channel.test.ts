// One session with an HTTP+SSE (2024-11-05) server, as Gatehouse holds it (issue 16 item 1): against the real
// server-everything in SSE mode, and against fake servers that misbehave on purpose: an `endpoint` event on
// another origin, a stream that never names an endpoint, a stream that drops mid-call, a flood of events.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { UpstreamCredentials } from '../../src/upstream/credentials.js';
import { createLogger } from '../../src/log/logger.js';
import { SseChannel } from '../../src/upstream/sse-channel.js';
import { startEverythingSse, type EverythingHttp } from '../fixtures/upstreams/everything-http.js';
import { sseMessage } from '../helpers/sse-messages.js';

const logs: Array<Record<string, unknown>> = [];
const log = createLogger('debug', (line) => void logs.push(JSON.parse(line) as Record<string, unknown>));
const credentials = (headers: Record<string, string> = {}): UpstreamCredentials => ({ current: () => headers, headers: async () => headers, invalidate() {}, close() {} });
const channel = (url: string, opts: Partial<{ openTimeoutMs: number; requestTimeoutMs: number; maxEventBytes: number; headers: Record<string, string>; pingIntervalMs: number; busySilenceMs: number }> = {}) =>
  new SseChannel({ upstream: 'sse', url, credentials: credentials(opts.headers), connectTimeoutMs: 3_000, openTimeoutMs: opts.openTimeoutMs ?? 3_000, requestTimeoutMs: opts.requestTimeoutMs ?? 5_000, ...(opts.maxEventBytes ? { maxEventBytes: opts.maxEventBytes } : {}), ...(opts.pingIntervalMs !== undefined ? { pingIntervalMs: opts.pingIntervalMs } : {}), ...(opts.busySilenceMs !== undefined ? { busySilenceMs: opts.busySilenceMs } : {}) }, log);
const INIT = { jsonrpc: '2.0' as const, id: 1, method: 'initialize', params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 't', version: '1' } } };

describe('against server-everything over HTTP+SSE', () => {
  let ev: EverythingHttp;
  before(async () => {
    ev = await startEverythingSse();
  });
  after(async () => {
    await ev.close();
  });

  test('initialize, list and call through the announced endpoint; answers matched by id; notifications handed on', async () => {
    const ch = channel(ev.url);
    const seen: unknown[] = [];
    ch.onMessage = (m) => seen.push(m);
    await ch.start();
    try {
      const init = await ch.request(INIT);
      assert.equal((init.result as { protocolVersion: string }).protocolVersion, '2024-11-05');
      ch.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      const [a, b] = await Promise.all([
        ch.request({ jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'echo', arguments: { message: 'first' } } }),
        ch.request({ jsonrpc: '2.0', id: 'b', method: 'tools/call', params: { name: 'echo', arguments: { message: 'second' } } }),
      ]);
      assert.deepEqual(a.result, { content: [{ type: 'text', text: 'Echo: first' }] });
      assert.deepEqual(b.result, { content: [{ type: 'text', text: 'Echo: second' }] });
      const progress = await ch.request({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'trigger-long-running-operation', arguments: { duration: 0.2, steps: 2 }, _meta: { progressToken: 'p1' } } });
      assert.equal(progress.error, undefined);
      assert.ok(seen.some((m) => (m as { method?: string }).method === 'notifications/progress'), 'progress came on the stream and was handed on');
    } finally {
      await ch.stop();
    }
    assert.equal(ch.alive, false);
  });
});

/**
 * A fake SSE server whose GET handler the test writes. `onPost` gets each POST's body and response, and the
 * event stream the last GET opened (where an HTTP+SSE server's answers go).
 */
async function fakeSse(
  onGet: (res: ServerResponse, origin: string) => void,
  onPost: (body: string, res: ServerResponse, stream: ServerResponse | undefined) => void = (_b, res) => void res.writeHead(202).end(),
): Promise<{ url: string; server: Server; posts: string[]; close(): Promise<void> }> {
  const posts: string[] = [];
  let stream: ServerResponse | undefined;
  const server = createServer((req, res) => {
    if (req.method === 'GET') {
      stream = res;
      return onGet(res, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    }
    let body = '';
    req.on('data', (c: Buffer) => (body += String(c)));
    req.on('end', () => {
      posts.push(body);
      onPost(body, res, stream);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/sse`,
    server,
    posts,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Opens the event stream and names the message endpoint on the fake's own origin; `more` goes in the same write. */
function announce(res: ServerResponse, origin: string, more = ''): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' }).write(`event: endpoint\ndata: ${origin}/message\n\n${more}`);
}

/** Answers request `id` on the event stream, as a `message` event. */
function answerOn(stream: ServerResponse | undefined, id: unknown, result: unknown): void {
  stream?.write(sseMessage({ jsonrpc: '2.0', id, result }));
}

/** The promise's value, or a note that it still was not settled after `ms`. */
const within = <T>(p: Promise<T>, ms: number): Promise<T | string> => Promise.race([p, new Promise<string>((r) => setTimeout(() => r(`still waiting after ${ms} ms`), ms).unref())]);

describe('servers that misbehave', () => {
  test('an endpoint on another origin is refused and logged, and nothing is ever posted to it', async () => {
    const elsewhere = await fakeSse((res) => res.writeHead(200, { 'content-type': 'text/event-stream' }).write('event: endpoint\ndata: /x\n\n'));
    const fake = await fakeSse((res) => res.writeHead(200, { 'content-type': 'text/event-stream' }).write(`event: endpoint\ndata: ${elsewhere.url.replace('/sse', '/message')}\n\n`));
    try {
      const ch = channel(fake.url);
      await assert.rejects(ch.start(), /named a message endpoint on another origin/);
      await assert.rejects(ch.request(INIT), /is not connected/);
      assert.deepEqual(elsewhere.posts, []);
      assert.ok(logs.some((l) => l.msg === 'an SSE upstream named an endpoint on another origin; refused'));
    } finally {
      await fake.close();
      await elsewhere.close();
    }
  });

  // WHATWG HTML §9.2.5: a line ends with CRLF, LF or CR, and a blank line ends the event, whichever its
  // terminator. Until 4 December a stream whose blank line ended otherwise than its lines was never read:
  // its endpoint never seen, the start failed after headersMs with "sent no endpoint event".
  test('a stream whose lines end in LF and whose blank lines end in CRLF or CR is read: its endpoint, then answers cut at odd places', async () => {
    const fake = await fakeSse(
      (res, origin) => void res.writeHead(200, { 'content-type': 'text/event-stream' }).write(`event: endpoint\ndata: ${origin}/message\n\r\n`),
      (body, res, stream) => {
        res.writeHead(202).end();
        const msg = JSON.parse(body) as { id: number };
        const event = `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { n: msg.id } })}\n`;
        // The first answer's blank line is a CRLF cut between its CR and its LF; the second's a lone CR.
        if (msg.id === 1) {
          stream?.write(`${event}\r`);
          setTimeout(() => stream?.write('\n'), 50);
        } else stream?.write(`${event}\r`);
      },
    );
    try {
      const ch = channel(fake.url, { openTimeoutMs: 1_500 });
      await ch.start();
      assert.deepEqual((await ch.request({ jsonrpc: '2.0', id: 1, method: 'tools/list' })).result, { n: 1 });
      assert.deepEqual((await ch.request({ jsonrpc: '2.0', id: 2, method: 'tools/list' })).result, { n: 2 });
      assert.equal(ch.alive, true);
      await ch.stop();
    } finally {
      await fake.close();
    }
  });

  // WHATWG HTML §9.2.5: an empty `event:` field leaves the event's type `message`. Until 4 December such an
  // answer was skipped, and its call waited for its limit.
  test('an answer whose event field is empty is a message event: the call gets it', async () => {
    const fake = await fakeSse(announce, (body, res, stream) => {
      res.writeHead(202).end();
      const msg = JSON.parse(body) as { id: number };
      stream?.write(`event:\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { ok: true } })}\n\n`);
    });
    try {
      const ch = channel(fake.url, { requestTimeoutMs: 2_000 });
      await ch.start();
      assert.deepEqual((await ch.request({ jsonrpc: '2.0', id: 1, method: 'tools/list' })).result, { ok: true });
      await ch.stop();
    } finally {
      await fake.close();
    }
  });

  // WHATWG HTML §9.2.5: one leading byte order mark is stripped by the stream's UTF-8 decode. Until 4 December
  // it stayed on the first field's name, and the start failed "sent no endpoint event".
  test('a stream that opens with a byte order mark names its endpoint all the same', async () => {
    const fake = await fakeSse((res, origin) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(Buffer.from([0xef, 0xbb, 0xbf]));
      res.write(`event: endpoint\ndata: ${origin}/message\n\n`);
    });
    try {
      const ch = channel(fake.url, { openTimeoutMs: 1_500 });
      await ch.start();
      assert.equal(ch.alive, true);
      await ch.stop();
    } finally {
      await fake.close();
    }
  });

  // An `endpoint` event whose data is no URL (2024-11-05 basic/transports §HTTP with SSE: it names the URI to
  // send messages to). Until 5 December the start failed "closed its event stream before naming an endpoint",
  // which sent whoever read it looking for a dropped connection.
  test('an endpoint event that is no URL fails the start saying so', async () => {
    const fake = await fakeSse((res) => res.writeHead(200, { 'content-type': 'text/event-stream' }).write('event: endpoint\ndata: http://[::1\n\n'));
    try {
      await assert.rejects(channel(fake.url, { openTimeoutMs: 1_500 }).start(), /named a message endpoint that is not a URL \(http:\/\/\[::1\)/);
    } finally {
      await fake.close();
    }
  });

  test('a stream that never names its endpoint fails the start within its opening time', async () => {
    const fake = await fakeSse((res) => res.writeHead(200, { 'content-type': 'text/event-stream' }).write(': still here\n\n'));
    try {
      // The stream stays open for good: only the opening time can end the start, and its error names it.
      const outcome = await within(channel(fake.url, { openTimeoutMs: 300 }).start().then(() => 'started', (err: Error) => err.message), 20_000);
      assert.match(outcome, /sent no endpoint event within 300 ms/);
    } finally {
      await fake.close();
    }
  });

  // A GET answered 200 with another media type whose body goes on (an HTML page streamed by a proxy, a
  // server that sends the wrong type on a stream that never ends). Until 5 December the start waited for the
  // body's end, which never came: the session's start hung, and the client's initialize with it.
  test('a GET answered with another media type and a body that never ends is refused at once, not waited out', async () => {
    const fake = await fakeSse((res) => res.writeHead(200, { 'content-type': 'text/html' }).write('<html>'));
    try {
      // Causal, not timed: the body never ends and the opening time (60 s) is past the 20 s bound, so only
      // a refusal on the media type alone can end the start in time.
      const outcome = await within(channel(fake.url, { openTimeoutMs: 60_000 }).start().then(() => 'started', (err: Error) => err.message), 20_000);
      assert.match(outcome, /answered the SSE GET with HTTP 200 \(text\/html\), not an event stream/);
    } finally {
      await fake.close();
    }
  });

  // RFC 9110 §8.3.1: a media type's type and subtype are case-insensitive, and so is a charset's name; a
  // parameter may follow after optional white space. Until 5 December a stream labelled
  // `Text/Event-Stream; charset=UTF-8` was refused "not an event stream", and every session failed to open.
  test('an event stream whose content type is written in another case is read; one that only begins like it is refused', async () => {
    for (const type of ['Text/Event-Stream; charset=UTF-8', 'TEXT/EVENT-STREAM', 'text/event-stream ;charset=utf-8']) {
      const fake = await fakeSse((res, origin) => res.writeHead(200, { 'content-type': type }).write(`event: endpoint\ndata: ${origin}/message\n\n`));
      try {
        const ch = channel(fake.url, { openTimeoutMs: 1_500 });
        await ch.start().catch((err: Error) => assert.fail(`${type}: ${err.message}`));
        assert.equal(ch.alive, true);
        await ch.stop();
      } finally {
        await fake.close();
      }
    }
    const fake = await fakeSse((res, origin) => res.writeHead(200, { 'content-type': 'text/event-streams' }).write(`event: endpoint\ndata: ${origin}/message\n\n`));
    try {
      await assert.rejects(channel(fake.url, { openTimeoutMs: 1_500 }).start(), /answered the SSE GET with HTTP 200 \(text\/event-streams\), not an event stream/);
    } finally {
      await fake.close();
    }
  });

  test('a GET that is not an event stream is refused clearly', async () => {
    const fake = await fakeSse((res) => res.writeHead(404, { 'content-type': 'text/plain' }).end('no'));
    try {
      await assert.rejects(channel(fake.url).start(), /answered the SSE GET with HTTP 404/);
    } finally {
      await fake.close();
    }
  });

  test('a stream that drops mid-call fails the call in flight with GW_ERR_UPSTREAM_BAD_RESPONSE; the channel reports its end', async () => {
    const fake = await fakeSse(
      (res, origin) => void res.writeHead(200, { 'content-type': 'text/event-stream' }).write(`event: endpoint\ndata: ${origin}/message?sessionId=1\n\n`),
      (_body, res, stream) => {
        res.writeHead(202).end();
        setTimeout(() => stream?.destroy(), 50);
      },
    );
    try {
      const ch = channel(fake.url);
      let ended: string | undefined;
      ch.onExit = (reason) => (ended = reason);
      await ch.start();
      await assert.rejects(ch.request(INIT), (err: Error & { code?: string }) => err.code === 'GW_ERR_UPSTREAM_BAD_RESPONSE' && /ended its event stream before answering/.test(err.message));
      assert.equal(ch.alive, false);
      assert.ok(ended);
    } finally {
      await fake.close();
    }
  });

  // A stalled server, or a network that drops packets without a reset: the connection looks open and no byte
  // comes. Until 4 December nothing noticed (the stream has no body timeout), and every call on the stream
  // waited for its own limit (callMs: 30 minutes by default), session after session. With a call in flight
  // the ping may wait behind it (a server that answers one message at a time), so the stream is given the
  // upstream's bodyMs of silence (busySilenceMs) before it is taken for dead; with none, the ping's interval.
  test('a stream gone silent under a call is noticed once it was silent for busySilenceMs, its ping unanswered: the call fails with GW_ERR_UPSTREAM_TIMEOUT, the stream is closed', async () => {
    let closed = false;
    const fake = await fakeSse((res, origin) => {
      res.on('close', () => (closed = true));
      announce(res, origin);
    });
    try {
      const ch = channel(fake.url, { pingIntervalMs: 200, busySilenceMs: 1_000, requestTimeoutMs: 30_000 });
      const gone = new Promise<string>((r) => (ch.onExit = r));
      await ch.start();
      const call = ch.request({ jsonrpc: '2.0', id: 'c1', method: 'tools/call', params: { name: 'slow', arguments: {} } });
      const outcome = await Promise.race([call.then(() => 'answered', (err: Error & { code?: string }) => err), new Promise<string>((r) => setTimeout(() => r('still waiting after 5 s'), 5_000).unref())]);
      assert.ok(outcome instanceof Error, String(outcome));
      assert.equal((outcome as Error & { code?: string }).code, 'GW_ERR_UPSTREAM_TIMEOUT');
      // The watchdog says why it ended the stream: busySilenceMs of silence under a call, not the ping's
      // interval (200 ms) nor the call's own limit (30 s, past the 5 s wait above).
      assert.match(outcome.message, /stopped answering on its event stream \(nothing came on it for 1000 ms while a request was in flight, timeouts.bodyMs, and a ping had no answer\)/);
      assert.match(await gone, /stopped answering \(nothing on the stream for 1000 ms with a request in flight/);
      assert.equal(ch.alive, false);
      assert.ok(fake.posts.some((p) => (JSON.parse(p) as { method?: string }).method === 'ping'), fake.posts.join(' '));
      for (let i = 0; i < 50 && !closed; i++) await new Promise((r) => setTimeout(r, 20));
      assert.ok(closed, 'the dead stream was closed');
      await ch.stop();
    } finally {
      await fake.close();
    }
  });

  // A stream that dies without a FIN under a call (a proxy that stops forwarding it, a NAT mapping dropped)
  // while the server itself goes on. Until 5 December only busySilenceMs (bodyMs, 5 minutes by default)
  // ended it, since a server may answer its ping only after the call. A server that keeps its stream alive
  // with comments, and whose message endpoint takes the ping after those comments were due, is running:
  // comments that stopped then mean a dead stream, noticed within a few ping intervals.
  test('a stream whose keep-alive comments stop under a call, while the server still takes its pings, is noticed within a few ping intervals, busySilenceMs notwithstanding', async () => {
    let streamDead = false;
    const fake = await fakeSse(
      (res, origin) => {
        announce(res, origin);
        const timer = setInterval(() => {
          if (!streamDead) res.write(': keep-alive\n\n');
        }, 50);
        res.on('close', () => clearInterval(timer));
      },
      (body, res, stream) => {
        res.writeHead(202).end();
        const msg = JSON.parse(body) as { id?: unknown; method?: string };
        // The call reaches the server; then the stream goes dead (nothing more comes on it, no FIN).
        if (msg.method === 'tools/call') streamDead = true;
        if (msg.method === 'ping' && !streamDead) answerOn(stream, msg.id, {});
      },
    );
    try {
      const ch = channel(fake.url, { pingIntervalMs: 200, busySilenceMs: 60_000, requestTimeoutMs: 60_000 });
      await ch.start();
      await new Promise((r) => setTimeout(r, 300));
      const call = ch.request({ jsonrpc: '2.0', id: 'c1', method: 'tools/call', params: { name: 'slow', arguments: {} } });
      // A bound, not a speed: the request's and the busy stream's limits are 60 s, so within 20 s only the
      // stopped keep-alives can have ended the call, as the message says.
      const outcome = await within(call.then(() => 'answered', (err: Error & { code?: string }) => err), 20_000);
      assert.ok(outcome instanceof Error, String(outcome));
      assert.equal((outcome as Error & { code?: string }).code, 'GW_ERR_UPSTREAM_TIMEOUT');
      assert.match(outcome.message, /stopped answering on its event stream \(its keep-alive comments stopped/);
      assert.equal(ch.alive, false);
      await ch.stop();
    } finally {
      await fake.close();
    }
  });

  // The same comments stopping, but the server does not take its pings either: its event loop is held by a
  // synchronous tool (a Python server's sync tool run on its loop), which stops its comments too. That is a
  // live server: the call's answer comes once the tool is done, and the stream must be kept.
  test('a server whose comments stop under a call and which takes no ping meanwhile (its event loop held) keeps its stream: the call gets its answer', async () => {
    let blocked = false;
    const held: ServerResponse[] = [];
    const fake = await fakeSse(
      (res, origin) => {
        announce(res, origin);
        const timer = setInterval(() => {
          if (!blocked) res.write(': keep-alive\n\n');
        }, 50);
        res.on('close', () => clearInterval(timer));
      },
      (body, res, stream) => {
        const msg = JSON.parse(body) as { id?: unknown; method?: string };
        if (blocked) return void held.push(res);
        res.writeHead(202).end();
        if (msg.method === 'ping') return answerOn(stream, msg.id, {});
        if (msg.method !== 'tools/call') return;
        blocked = true;
        setTimeout(() => {
          blocked = false;
          answerOn(stream, msg.id, { done: true });
          // The messages that waited are taken, and answered, once the loop is free again.
          for (const r of held.splice(0)) r.writeHead(202).end();
        }, 1_500);
      },
    );
    try {
      const ch = channel(fake.url, { pingIntervalMs: 200, busySilenceMs: 10_000, requestTimeoutMs: 30_000 });
      await ch.start();
      await new Promise((r) => setTimeout(r, 300));
      const answer = await ch.request({ jsonrpc: '2.0', id: 'c1', method: 'tools/call', params: { name: 'blocking', arguments: {} } });
      assert.deepEqual(answer.result, { done: true });
      assert.equal(ch.alive, true);
      await ch.stop();
    } finally {
      await fake.close();
    }
  });

  // A comment or two when the stream opens (`: connected`) is a greeting, not a keep-alive: a server that
  // writes no comments after it, and answers its messages one at a time, is silent under a long call while
  // it takes its pings, and is alive.
  test('a server that greets with two comments, then writes none, and takes its pings during a long call keeps its stream', async () => {
    const fake = await fakeSse(
      (res, origin) => announce(res, origin, ': connected\n\n: hello\n\n'),
      (body, res, stream) => {
        res.writeHead(202).end();
        const msg = JSON.parse(body) as { id?: unknown; method?: string };
        // One message at a time: the call's answer after 1.5 s, its pings' answers only after it.
        if (msg.method === 'tools/call') setTimeout(() => answerOn(stream, msg.id, { done: true }), 1_500);
      },
    );
    try {
      const ch = channel(fake.url, { pingIntervalMs: 200, busySilenceMs: 10_000, requestTimeoutMs: 30_000 });
      await ch.start();
      const answer = await ch.request({ jsonrpc: '2.0', id: 'c1', method: 'tools/call', params: { name: 'slow', arguments: {} } });
      assert.deepEqual(answer.result, { done: true });
      assert.equal(ch.alive, true);
      assert.ok(fake.posts.some((p) => (JSON.parse(p) as { method?: string }).method === 'ping'), 'the stream was pinged during the call');
      await ch.stop();
    } finally {
      await fake.close();
    }
  });

  test('an idle stream gone silent is noticed by its ping alone, busySilenceMs notwithstanding', async () => {
    const fake = await fakeSse(announce);
    try {
      const ch = channel(fake.url, { pingIntervalMs: 200, busySilenceMs: 60_000 });
      const gone = new Promise<string>((r) => (ch.onExit = r));
      await ch.start();
      // Ended by the ping's rule (its reason says so), within a wait far short of busySilenceMs (60 s).
      const reason = await Promise.race([gone, new Promise<string>((r) => setTimeout(() => r('still open after 5 s'), 5_000).unref())]);
      assert.match(reason, /stopped answering \(no answer to a ping within 200 ms, timeouts.pingMs\)/);
      await ch.stop();
    } finally {
      await fake.close();
    }
  });

  test('a server that says nothing between calls but answers its pings keeps its stream; with no ping interval none is sent', async () => {
    const fake = await fakeSse(announce, (body, res, stream) => {
      res.writeHead(202).end();
      const msg = JSON.parse(body) as { id?: unknown; method?: string };
      if (msg.method === 'ping') answerOn(stream, msg.id, {});
    });
    try {
      const ch = channel(fake.url, { pingIntervalMs: 150 });
      await ch.start();
      await new Promise((r) => setTimeout(r, 1_200));
      assert.equal(ch.alive, true);
      const pings = fake.posts.filter((p) => (JSON.parse(p) as { method?: string }).method === 'ping').length;
      assert.ok(pings >= 2, `${pings} pings`);
      await ch.stop();
      fake.posts.length = 0;
      const quiet = channel(fake.url, { pingIntervalMs: 0 });
      await quiet.start();
      await new Promise((r) => setTimeout(r, 400));
      assert.equal(quiet.alive, true);
      assert.deepEqual(fake.posts, []);
      await quiet.stop();
    } finally {
      await fake.close();
    }
  });

  test('a flood: an event larger than the limit ends the session instead of growing memory', async () => {
    const fake = await fakeSse((res, origin) => {
      announce(res, origin);
      const chunk = `data: ${'x'.repeat(64 * 1024)}`;
      let sent = 0;
      const pump = (): void => {
        while (sent < 64 && res.write(chunk)) sent++;
        if (sent < 64) res.once('drain', pump);
      };
      pump();
    });
    try {
      const ch = channel(fake.url, { maxEventBytes: 1024 * 1024 });
      const gone = new Promise<string>((r) => (ch.onExit = r));
      await ch.start();
      assert.match(await gone, /more than 1048576 characters/);
      assert.equal(ch.alive, false);
    } finally {
      await fake.close();
    }
  });

  test('many small events are all handed on in order', async () => {
    const fake = await fakeSse((res, origin) => {
      announce(res, origin);
      let text = '';
      for (let i = 0; i < 2_000; i++) text += `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":${i}}}\n\n`;
      res.write(text);
    });
    try {
      const ch = channel(fake.url);
      const got: number[] = [];
      const all = new Promise<void>((resolve) => {
        ch.onMessage = (m) => {
          got.push((m as unknown as { params: { data: number } }).params.data);
          if (got.length === 2_000) resolve();
        };
      });
      await ch.start();
      await all;
      assert.deepEqual(got.slice(0, 3), [0, 1, 2]);
      assert.equal(got.at(-1), 1_999);
      await ch.stop();
    } finally {
      await fake.close();
    }
  });

  // Over HTTP+SSE each message is its own POST, and a pool sends them on several connections at once: the
  // server takes in whichever it has read whole first. A cancellation (2025-11-25 basic/utilities/cancellation)
  // that overtook its request found nothing to cancel, and the request then ran; a request that overtook
  // `notifications/initialized` (basic/lifecycle.mdx §Initialization) reached a server not yet initialized.
  test('a notification is posted only once the messages before it were taken; a message after a notification waits for it', async () => {
    const taken: string[] = [];
    const fake = await fakeSse(
      (res) => void res.writeHead(200, { 'content-type': 'text/event-stream' }).write(`event: endpoint\ndata: /message\n\n`),
      (body, res) => {
        const msg = JSON.parse(body) as { method: string; params?: { slow?: boolean } };
        // A server slow to take in one message (a large body, a busy handler): the one after it is quick.
        const take = (): void => {
          taken.push(msg.method);
          res.writeHead(202).end();
        };
        if (msg.params?.slow === true) setTimeout(take, 150);
        else take();
      },
    );
    try {
      const ch = channel(fake.url);
      await ch.start();
      ch.send({ jsonrpc: '2.0', method: 'notifications/initialized', params: { slow: true } });
      const listed = ch.request({ jsonrpc: '2.0', id: 'l', method: 'tools/list', params: {} }).catch(() => undefined);
      const call = ch.request({ jsonrpc: '2.0', id: 'c', method: 'tools/call', params: { slow: true, name: 'x' } as never }).catch(() => undefined);
      ch.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'c' } });
      for (let i = 0; i < 100 && taken.length < 4; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(taken[0], 'notifications/initialized');
      assert.deepEqual([...taken.slice(1, 3)].sort(), ['tools/call', 'tools/list']);
      assert.equal(taken[3], 'notifications/cancelled');
      await ch.stop();
      await Promise.all([listed, call]);
    } finally {
      await fake.close();
    }
  });

  // A message is taken once the server answered its POST 2xx (2024-11-05 basic/transports §HTTP with SSE: the
  // answer comes on the stream, the POST's own body carries nothing). Until 5 December Gatehouse waited for
  // the POST's body to end as well, and a server (or proxy) that sent 202 and held the body open held every
  // message after a notification (the client's `notifications/initialized`, a cancellation) for the pool's
  // body timeout, 5 minutes: the session's first call waited that long.
  test('a message whose POST is answered 202 with a body that does not end is taken: the messages after it go at once', async () => {
    const fake = await fakeSse(announce, (body, res, stream) => {
      const msg = JSON.parse(body) as { id?: unknown; method?: string };
      // The notification's 202 comes with a body that never ends; the others' end.
      if (msg.method === 'notifications/initialized') return void res.writeHead(202, { 'content-type': 'text/plain' }).write('Accepted');
      res.writeHead(202).end();
      if (msg.id !== undefined) answerOn(stream, msg.id, { ok: true });
    });
    try {
      const ch = channel(fake.url);
      await ch.start();
      ch.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      const listed = await within(ch.request({ jsonrpc: '2.0', id: 'l', method: 'tools/list' }).then((r) => r.result), 3_000);
      assert.deepEqual(listed, { ok: true });
      await ch.stop();
    } finally {
      await fake.close();
    }
  });

  // 2025-03-26 basic/transports.mdx §Sending Messages 6 and basic/index.mdx: that revision's messages may come
  // as a JSON-RPC batch, and a server that negotiated it may send one on its stream whatever the transport
  // (a stdio child's batch is split, stdio-process.ts). Until 5 December the channel took a batch event for
  // one message that answered nothing: the calls it answered waited for their limits.
  test('a batch event (2025-03-26) answers each request it holds; its notifications are handed on', async () => {
    const held: Array<{ id: unknown }> = [];
    const fake = await fakeSse(announce, (body, res, stream) => {
      res.writeHead(202).end();
      held.push(JSON.parse(body) as { id: unknown });
      if (held.length < 2) return;
      const batch = [...held.map((m) => ({ jsonrpc: '2.0', id: m.id, result: { id: m.id } })), { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } }];
      stream?.write(sseMessage(batch));
    });
    try {
      const ch = channel(fake.url, { requestTimeoutMs: 10_000 });
      const seen: unknown[] = [];
      ch.onMessage = (m) => seen.push(m);
      await ch.start();
      const both = Promise.all([ch.request({ jsonrpc: '2.0', id: 'a', method: 'tools/list' }), ch.request({ jsonrpc: '2.0', id: 'b', method: 'tools/list' })]).then((r) => r.map((x) => x.result));
      assert.deepEqual(await within(both, 3_000), [{ id: 'a' }, { id: 'b' }]);
      assert.deepEqual(seen, [{ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } }]);
      await ch.stop();
    } finally {
      await fake.close();
    }
  });

  test('credentials go on the GET and on every POST', async () => {
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(`${req.method} ${req.headers.authorization}`);
      if (req.method === 'GET') res.writeHead(200, { 'content-type': 'text/event-stream' }).write(`event: endpoint\ndata: /message\n\n`);
      else {
        req.resume();
        res.writeHead(202).end();
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const ch = channel(`http://127.0.0.1:${(server.address() as AddressInfo).port}/sse`, { headers: { authorization: 'Bearer upstream-token' } });
      await ch.start();
      ch.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      for (let i = 0; i < 50 && seen.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(seen, ['GET Bearer upstream-token', 'POST Bearer upstream-token']);
      await ch.stop();
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
