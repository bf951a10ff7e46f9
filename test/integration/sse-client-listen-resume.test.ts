// Behind an HTTP+SSE client Gatehouse holds the upstream's GET stream as a Streamable HTTP client would. A
// 2025-11-25 server gives that stream event ids (a priming event first) and may close its connection
// without ending the stream; what it sends meanwhile it keeps for the client that comes back with
// Last-Event-ID, and only for it (2025-11-25/basic/transports.mdx §Listening for Messages from the Server,
// §Resumability and Redelivery: the server MUST NOT replay it on another stream). So when Gatehouse opens the
// stream again it must resume it, or the SSE client never hears what was said while it was away.
// The upstream is the v1 SDK's McpServer with an event store and `closeStandaloneSSEStream` (polling-server).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startPollingServer } from '../fixtures/upstreams/polling-server.js';
import { startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { connectSseClientThroughGateway, type SseClientThroughGateway } from '../helpers/sse-client.js';
import { waitUntil } from '../helpers/stdio-children.js';

test('a list change sent while the upstream had closed the GET stream reaches the SSE client: the stream is resumed with Last-Event-ID', async () => {
  const up = await startPollingServer({ retryMs: 100 });
  let sse: SseClientThroughGateway | undefined;
  try {
    sse = await connectSseClientThroughGateway({ name: 'poll', url: up.url }, 'sse-resume-listen');
    const changes = sse.listChanges;
    assert.ok(await waitUntil(() => up.freshGets === 1, 5_000), 'the listen stream opened');
    await up.toolsChanged();
    assert.ok(await waitUntil(() => changes() === 1, 5_000), 'heard while the stream was open');
    up.closeListenStreams();
    // Said while nobody listens: the server stores it for the stream's resumption.
    await up.toolsChanged();
    assert.ok(await waitUntil(() => up.freshGets + up.resumes.length >= 2, 5_000), 'the listen stream opened again');
    assert.ok(await waitUntil(() => changes() === 2, 3_000), `the change made while the stream was closed never arrived (${changes()} heard; resumes: ${up.resumes.length}, fresh GETs: ${up.freshGets})`);
    assert.equal(up.freshGets, 1, 'the stream was resumed, not opened anew');
  } finally {
    await sse?.close();
    await up.close();
  }
});

test('a resume the server refuses (it forgot the stream) is followed by a fresh GET, not by silence', async () => {
  // A fake: no SDK server forgets its streams on cue. Its first GET stream gives an event id and closes; a
  // GET that resumes is refused (400); a fresh one says the tools changed.
  const gets: string[] = [];
  const up = await startFakeUpstream((req, res, body) => {
    const session = { 'mcp-session-id': 'forgetful' };
    if (req.method === 'GET') {
      const last = req.headers['last-event-id'];
      gets.push(typeof last === 'string' ? `resume ${last}` : 'fresh');
      if (typeof last === 'string') return void res.writeHead(400, session).end();
      res.writeHead(200, { 'content-type': 'text/event-stream', ...session });
      res.write(`id: e${gets.length}\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n`);
      if (gets.length === 1) res.end();
      return;
    }
    if (req.method === 'DELETE') return void res.writeHead(200, session).end();
    const msg = JSON.parse(body) as { id?: number | string; method?: string; params?: { protocolVersion?: string } };
    if (msg.id === undefined) return void res.writeHead(202, session).end();
    const result = msg.method === 'initialize' ? { protocolVersion: msg.params?.protocolVersion ?? '2025-11-25', capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'forgetful', version: '1' } } : {};
    res.writeHead(200, { 'content-type': 'application/json', ...session }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
  });
  let sse: SseClientThroughGateway | undefined;
  try {
    sse = await connectSseClientThroughGateway({ name: 'f', url: up.url }, 'sse-refused-resume');
    const changes = sse.listChanges;
    assert.ok(await waitUntil(() => changes() === 2, 8_000), `heard ${changes()} changes; GETs: ${gets.join(', ')}`);
    assert.deepEqual(gets.slice(0, 3), ['fresh', 'resume e1', 'fresh']);
  } finally {
    await sse?.close();
    await up.close();
  }
});

test('a server that keeps closing its GET stream (polling) is come back to each time, the stream resumed every time', async () => {
  // 2025-11-25/basic/transports.mdx §Sending Messages 6, and §Listening for Messages 4 for a GET stream: a
  // server MAY close the connection of a stream that gave event ids, at any time, "to avoid holding a
  // long-lived connection", and the client SHOULD then poll, after the server's `retry` ("MUST respect"),
  // here the client's own 1 s, as the SDK's GET stream names none. Each poll brings what was said meanwhile:
  // nothing calls for a longer wait, and one that doubled held each message back 1, 2, 4, then 8 s. That
  // wait is checked on a mocked clock in test/unit/upstream/resumable-sse.test.ts (the same each time); here,
  // that the real server's polls are each resumed and each heard.
  const up = await startPollingServer({ retryMs: 100 });
  let sse: SseClientThroughGateway | undefined;
  try {
    sse = await connectSseClientThroughGateway({ name: 'poll', url: up.url }, 'sse-poll-retry');
    const changes = sse.listChanges;
    assert.ok(await waitUntil(() => up.freshGets === 1, 5_000), 'the listen stream opened');
    // Its first event gives the stream an id to resume from (the SDK primes only POST streams).
    await up.toolsChanged();
    assert.ok(await waitUntil(() => changes() === 1, 5_000), 'heard while the stream was open');
    // The server polls: it closes the stream's connection, says something, and the client comes back.
    for (let round = 2; round <= 5; round++) {
      up.closeListenStreams();
      await up.toolsChanged();
      assert.ok(await waitUntil(() => changes() === round, 20_000), `round ${round}: nothing heard (${changes()}; resumes ${up.resumes.join(' ')}; fresh ${up.freshGets})`);
      assert.equal(up.resumes.length, round - 1, `round ${round}: one resume per poll (${up.resumes.join(' ')})`);
    }
    assert.equal(up.freshGets, 1, 'every poll resumed the stream');
  } finally {
    await sse?.close();
    await up.close();
  }
});
