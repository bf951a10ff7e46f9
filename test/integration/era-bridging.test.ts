// Bridging details the era matrix does not isolate, each against an upstream scripted to show it:
// GATEWAY-REQUIREMENTS §16.1 (modern client → legacy upstream) and §16.2 (legacy client → modern upstream).

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { request } from 'undici';
import { startChangingHeaderUpstream } from '../fixtures/upstreams/changing-header.js';
import { jsonResult, sleep, startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, modernRequest, post, rpc } from '../helpers/http.js';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function gatewayFor(up: FakeUpstream, extra: Record<string, unknown> = {}): Promise<TestGateway> {
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url }], ...extra });
  cleanups.push(() => gw.close());
  return gw;
}

type Msg = { id?: string | number; method?: string; params?: Record<string, any> };

/** A scripted legacy server: sessions it can forget, and per-method behaviour. */
async function legacyUpstream(onCall: (msg: Msg, res: ServerResponse) => void, opts: { sessionInitDelayMs?: number } = {}): Promise<FakeUpstream & { live: Set<string> }> {
  const live = new Set<string>();
  let n = 0;
  const up = await startFakeUpstream((req, res, body) => {
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    // No GET stream here (2025-11-25/basic/transports.mdx §Listening for Messages: SSE or 405).
    if (req.method === 'GET') return void res.writeHead(405, { allow: 'POST, DELETE' }).end();
    const msg = JSON.parse(body) as Msg;
    if (msg.method === 'initialize') {
      const id = `legacy-session-${++n}`;
      live.add(id);
      const text = JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {}, logging: {} }, serverInfo: { name: 'scripted-legacy', version: '1' } } });
      // The era probe's own handshake is never slowed, only the sessions opened for clients.
      const delay = msg.id === 'gatehouse-probe' ? 0 : (opts.sessionInitDelayMs ?? 0);
      const answer = (): void => void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': id }).end(text);
      return void (delay > 0 ? setTimeout(answer, delay) : answer());
    }
    const session = String(req.headers['mcp-session-id']);
    if (msg.method === 'server/discover') return void res.writeHead(400, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: Server not initialized"}}');
    if (!live.has(session)) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}');
    if (msg.id === undefined || msg.method === undefined) return void res.writeHead(202).end();
    // Gatehouse lists the upstream to learn the tools it routes; these scripted tools are not listed.
    if (msg.method === 'tools/list') return jsonResult(res, JSON.stringify(msg), { tools: [] });
    onCall(msg, res);
  }, { handshake: false });
  cleanups.push(() => up.close());
  return Object.assign(up, { live });
}

/**
 * A scripted legacy server (no GET stream, one session `sessionId`, server name `name`) whose client answers
 * come back as POSTed responses: `onCall` takes each tools/call, `onAnswer` each other message and returns
 * true when it answered the POST itself (otherwise 202).
 */
async function legacyUpstreamTakingAnswers(
  sessionId: string,
  name: string,
  onCall: (msg: Msg, res: ServerResponse) => void,
  onAnswer: (msg: Msg & { result?: unknown }, res: ServerResponse) => boolean,
): Promise<FakeUpstream> {
  const up = await startFakeUpstream((req, res, body) => {
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    if (req.method === 'GET') return void res.writeHead(405, { allow: 'POST, DELETE' }).end();
    const msg = JSON.parse(body) as Msg & { result?: unknown };
    if (msg.method === 'initialize') {
      return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': sessionId }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name, version: '1' } } }));
    }
    if (msg.method === 'server/discover') return void res.writeHead(400, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request"}}');
    if (msg.method === 'tools/list') return jsonResult(res, body, { tools: [] });
    if (msg.method === 'tools/call') return onCall(msg, res);
    if (!onAnswer(msg, res)) res.writeHead(202).end();
  }, { handshake: false });
  cleanups.push(() => up.close());
  return up;
}

function bodies(up: FakeUpstream): Msg[] {
  return up.requests.filter((r) => r.body).map((r) => JSON.parse(r.body) as Msg);
}

/** `text` and what `reader` (an SSE body) gives after it, read on until `done` holds or the stream ends: 50 chunks at most. */
async function readOn(reader: AsyncIterator<unknown>, text: string, done: (text: string) => boolean): Promise<string> {
  for (let i = 0; i < 50 && !done(text); i++) {
    const next = await reader.next();
    if (next.done) break;
    text += String(next.value);
  }
  return text;
}

describe('modern client → legacy upstream (§16.1)', () => {
  /** A modern client calls `tool` and leaves once the call has gone upstream: the id it went up with. */
  async function leaveOnceForwarded(gw: TestGateway, up: FakeUpstream, tool: string): Promise<unknown> {
    const call = modernRequest(1, 'tools/call', { name: tool, arguments: {} });
    const ac = new AbortController();
    const pending = request(gw.url, { method: 'POST', headers: call.headers, body: call.body, signal: ac.signal }).catch(() => undefined);
    for (let i = 0; i < 50 && !bodies(up).some((m) => m.method === 'tools/call'); i++) await sleep(20);
    const forwardedId = bodies(up).find((m) => m.method === 'tools/call')!.id;
    ac.abort();
    await pending;
    return forwardedId;
  }

  test('results become modern: resultType, serverInfo, and ttlMs/cacheScope on cacheable results only', async () => {
    const up = await legacyUpstream((msg, res) => jsonResult(res, JSON.stringify(msg), msg.method === 'tools/list' ? { tools: [] } : { content: [] }));
    const gw = await gatewayFor(up);
    const list = await post(gw.url, modernRequest(1, 'tools/list').body, modernRequest(1, 'tools/list').headers);
    const listResult = list.json().result;
    assert.equal(listResult.resultType, 'complete');
    assert.equal(listResult.ttlMs, 0);
    assert.equal(listResult.cacheScope, 'private');
    assert.deepEqual(listResult._meta['io.modelcontextprotocol/serverInfo'], { name: 'scripted-legacy', version: '1' });
    const call = modernRequest(2, 'tools/call', { name: 't', arguments: {} });
    const callResult = (await post(gw.url, call.body, call.headers)).json().result;
    assert.equal(callResult.resultType, 'complete');
    assert.equal('ttlMs' in callResult, false);
    // What went upstream was legacy: no modern _meta keys, a gateway-unique id.
    const forwarded = bodies(up).find((m) => m.method === 'tools/call')!;
    assert.equal(forwarded.params?._meta, undefined);
    assert.match(String(forwarded.id), /^gh-\d+$/);
  });

  test('server/discover is answered from the upstream InitializeResult, with modern versions only', async () => {
    const up = await legacyUpstream(() => assert.fail('nothing should be forwarded'));
    const gw = await gatewayFor(up);
    const d = modernRequest('d', 'server/discover');
    const result = (await post(gw.url, d.body, d.headers)).json().result;
    assert.deepEqual(result.supportedVersions, ['2026-07-28']);
    assert.deepEqual(result.capabilities, { tools: {}, logging: {} });
    assert.equal(result.resultType, 'complete');
    assert.equal(typeof result.ttlMs, 'number');
    assert.equal(result.cacheScope, 'public');
  });

  test('an upstream session that expired is re-initialized transparently', async () => {
    const up = await legacyUpstream((msg, res) => jsonResult(res, JSON.stringify(msg), { content: [{ type: 'text', text: 'ok' }] }));
    const gw = await gatewayFor(up);
    const call = modernRequest(1, 'tools/call', { name: 't', arguments: {} });
    assert.equal((await post(gw.url, call.body, call.headers)).status, 200);
    up.live.clear(); // the upstream forgets every session
    const again = await post(gw.url, call.body, call.headers);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.json().result.content[0].text, 'ok');
    // Two session handshakes for this caller (the era probe's, and the one Gatehouse lists tools in for
    // itself, are separate).
    assert.equal(gw.logs.filter((l) => l.msg === 'legacy upstream session opened for modern clients' && l.owner === 'caller').length, 2);
  });

  test('a method the legacy upstream does not have answers the modern client 404 -32601 (streamable-http.mdx §Protocol Version Header: MUST)', async () => {
    const up = await legacyUpstream((msg, res) => {
      const error = msg.method === 'prompts/list' ? { code: -32601, message: 'Method not found' } : { code: -32603, message: 'Internal error' };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error }));
    });
    const gw = await gatewayFor(up);
    const list = modernRequest(1, 'prompts/list');
    const res = await post(gw.url, list.body, list.headers);
    assert.equal(res.status, 404, res.text);
    assert.equal(res.json().error.code, -32601);
    assert.equal(res.json().id, 1);
    // Any other error of one message stays a 200 answer.
    const read = modernRequest(2, 'resources/read', { uri: 'file:///x' });
    assert.equal((await post(gw.url, read.body, read.headers)).status, 200);
  });

  test('a legacy server\'s own code in -32020…-32099 reaches a modern client as -32603 naming it, never as a modern code (GATEWAY-REQUIREMENTS §16.1)', async () => {
    const up = await legacyUpstream((msg, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32021, message: 'quota exceeded (legacy server code)' } })));
    const gw = await gatewayFor(up);
    const call = modernRequest(1, 'tools/call', { name: 't', arguments: {} });
    const res = await post(gw.url, call.body, call.headers);
    assert.equal(res.status, 200, 'not the 400 of a modern -32021');
    assert.deepEqual(res.json().error, { code: -32603, message: 'quota exceeded (legacy server code)', data: { upstreamCode: -32021 } });
  });

  test('-32002 (legacy resource not found) becomes -32602 for a modern client', async () => {
    const up = await legacyUpstream((msg, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32002, message: 'Resource not found' } })));
    const gw = await gatewayFor(up);
    const read = modernRequest(1, 'resources/read', { uri: 'file:///missing' });
    const res = (await post(gw.url, read.body, read.headers)).json();
    assert.equal(res.error.code, -32602);
    assert.equal(res.id, 1);
  });

  test('a per-request logLevel becomes logging/setLevel upstream; without one, log messages are dropped', async () => {
    const up = await legacyUpstream((msg, res) => {
      if (msg.method === 'logging/setLevel') return jsonResult(res, JSON.stringify(msg), {});
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'hello log' } })}\n\n`);
      res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { content: [] } })}\n\n`);
    });
    const gw = await gatewayFor(up);
    const quiet = modernRequest(1, 'tools/call', { name: 't', arguments: {} });
    assert.doesNotMatch((await post(gw.url, quiet.body, quiet.headers)).text, /hello log/);
    const loud = modernRequest(2, 'tools/call', { name: 't', arguments: {}, _meta: { 'io.modelcontextprotocol/logLevel': 'debug' } });
    assert.match((await post(gw.url, loud.body, loud.headers)).text, /hello log/);
    const setLevel = bodies(up).find((m) => m.method === 'logging/setLevel');
    assert.deepEqual(setLevel?.params, { level: 'debug' });
    // The session now logs at debug (the latest request's level); a request that asked for error gets only
    // what is at or above error (logging.mdx §Per-request log level).
    const strict = modernRequest(3, 'tools/call', { name: 't', arguments: {}, _meta: { 'io.modelcontextprotocol/logLevel': 'error' } });
    assert.doesNotMatch((await post(gw.url, strict.body, strict.headers)).text, /hello log/, 'an info message is below error');
  });

  test('closing the client stream sends notifications/cancelled upstream for that call (legacy needs it explicitly)', async () => {
    const up = await legacyUpstream((_msg, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': working\n\n'); // never answers
    });
    const gw = await gatewayFor(up);
    const forwardedId = await leaveOnceForwarded(gw, up, 'slow');
    for (let i = 0; i < 100 && !bodies(up).some((m) => m.method === 'notifications/cancelled'); i++) await sleep(20);
    const cancel = bodies(up).find((m) => m.method === 'notifications/cancelled');
    assert.equal(cancel?.params?.requestId, forwardedId);
  });

  test('a client that leaves while a legacy server works on a plain JSON answer also cancels the call upstream', async () => {
    // The whole run happens inside the POST (no stream yet): the cancellation must already be armed.
    let closedEarly = false;
    const up = await legacyUpstream((msg, res) => {
      res.on('close', () => void (closedEarly = !res.writableFinished));
      setTimeout(() => {
        if (!res.destroyed) jsonResult(res, JSON.stringify(msg), { content: [{ type: 'text', text: 'done' }] });
      }, 1_500);
    });
    const gw = await gatewayFor(up);
    const forwardedId = await leaveOnceForwarded(gw, up, 'slow-json');
    for (let i = 0; i < 50 && !bodies(up).some((m) => m.method === 'notifications/cancelled'); i++) await sleep(20);
    assert.equal(bodies(up).find((m) => m.method === 'notifications/cancelled')?.params?.requestId, forwardedId);
    assert.equal(closedEarly, true, 'the upstream request was closed before its answer');
  });

  test('a client that leaves before its call went upstream gets no notifications/cancelled sent for it: the request was never issued (L basic/utilities/cancellation.mdx §Behavior Requirements 1)', async () => {
    const up = await legacyUpstream((msg, res) => jsonResult(res, JSON.stringify(msg), { content: [] }), { sessionInitDelayMs: 600 });
    const gw = await gatewayFor(up);
    const call = modernRequest(1, 'tools/call', { name: 't', arguments: {} });
    const ac = new AbortController();
    const pending = request(gw.url, { method: 'POST', headers: call.headers, body: call.body, signal: ac.signal }).catch(() => undefined);
    // Gone while Gatehouse still opens the legacy session the call needs.
    for (let i = 0; i < 50 && !bodies(up).some((m) => m.method === 'initialize'); i++) await sleep(20);
    ac.abort();
    await pending;
    await sleep(1_200);
    const sent = bodies(up).map((m) => m.method);
    assert.equal(sent.includes('tools/call'), false, `the call never went up: ${sent.join(', ')}`);
    assert.equal(sent.includes('notifications/cancelled'), false, `a cancellation may only name a request that was sent: ${sent.join(', ')}`);
  });

  test('MRTR: requestState is single-use, bound to its tool, and expires after sessions.inputTimeoutMs', async () => {
    let n = 0;
    const up = await legacyUpstream((msg, res) => {
      // Every call asks the client for input first, then never answers: the gateway must park it.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: `elicit-${++n}`, method: 'elicitation/create', params: { message: 'name?', requestedSchema: { type: 'object', properties: {} } } })}\n\n`);
      void msg;
    });
    const gw = await gatewayFor(up, { sessions: { inputTimeoutMs: 400 } });
    const caps = { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };
    const first = modernRequest(1, 'tools/call', { name: 'ask', arguments: {}, _meta: caps });
    const asked = (await post(gw.url, first.body, first.headers)).json().result;
    assert.equal(asked.resultType, 'input_required');
    const [key] = Object.keys(asked.inputRequests);
    assert.equal(asked.inputRequests[key!].method, 'elicitation/create');
    assert.equal(typeof asked.requestState, 'string');
    // Another tool cannot redeem it; a forged state is refused.
    const wrongTool = modernRequest(2, 'tools/call', { name: 'other', arguments: {}, requestState: asked.requestState, inputResponses: {}, _meta: caps });
    assert.equal((await post(gw.url, wrongTool.body, wrongTool.headers)).json().error.code, -32602);
    const forged = modernRequest(3, 'tools/call', { name: 'ask', arguments: {}, requestState: `${asked.requestState}x`, inputResponses: {}, _meta: caps });
    assert.equal((await post(gw.url, forged.body, forged.headers)).json().error.code, -32602);
    // After the wait runs out the parked call is cancelled upstream and the state no longer works.
    await sleep(700);
    const late = modernRequest(4, 'tools/call', { name: 'ask', arguments: {}, requestState: asked.requestState, inputResponses: { [key!]: { action: 'accept', content: {} } }, _meta: caps });
    const lateRes = (await post(gw.url, late.body, late.headers)).json();
    assert.equal(lateRes.error.code, -32602);
    assert.match(lateRes.error.message, /requestState is invalid, expired or already used/);
    assert.ok(bodies(up).some((m) => m.method === 'notifications/cancelled'), 'the parked call was cancelled upstream');
  });

  test('MRTR: a retry that leaves the question unanswered is asked it again; the answer then reaches the upstream (mrtr.mdx §Error Handling)', async () => {
    let waiting: ServerResponse | undefined;
    let callId: unknown;
    const answers: unknown[] = [];
    const up = await legacyUpstreamTakingAnswers(
      'asks-again',
      'asks',
      (msg, res) => {
        callId = msg.id;
        waiting = res;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: 'ask-name', method: 'elicitation/create', params: { message: 'name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } } })}\n\n`);
      },
      (msg, res) => {
        if (msg.id !== 'ask-name' || msg.result === undefined) return false;
        answers.push(msg.result);
        res.writeHead(202).end();
        waiting?.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: callId, result: { content: [{ type: 'text', text: `hello ${(msg.result as { content?: { name?: string } }).content?.name}` }] } })}\n\n`);
        return true;
      },
    );
    const gw = await gatewayFor(up);
    const caps = { 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } } };
    const call = async (id: number, extra: Record<string, unknown> = {}) => {
      const req = modernRequest(id, 'tools/call', { name: 'greet', arguments: {}, _meta: caps, ...extra });
      return (await post(gw.url, req.body, req.headers)).json().result as Record<string, any>;
    };
    const asked = await call(1);
    assert.equal(asked.resultType, 'input_required');
    const [key] = Object.keys(asked.inputRequests);
    const again = await call(2, { requestState: asked.requestState, inputResponses: {} });
    assert.equal(again.resultType, 'input_required', JSON.stringify(again));
    assert.deepEqual(again.inputRequests, asked.inputRequests, 'the same question, asked again');
    assert.notEqual(again.requestState, asked.requestState);
    assert.deepEqual(answers, [], 'nothing was made up for the upstream');
    const done = await call(3, { requestState: again.requestState, inputResponses: { [key!]: { action: 'accept', content: { name: 'Ada' } } } });
    assert.equal(done.content[0].text, 'hello Ada', JSON.stringify(done));
    assert.equal(answers.length, 1);
  });

  test('MRTR: progress after the retry goes under the retry\'s own token, never the finished first request\'s (utilities/progress.mdx)', async () => {
    let waiting: ServerResponse | undefined;
    let call: Msg | undefined;
    const up = await legacyUpstreamTakingAnswers(
      'progress-after',
      'p',
      (msg, res) => {
        call = msg;
        waiting = res;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: 'ask', method: 'elicitation/create', params: { message: 'go?', requestedSchema: { type: 'object', properties: {} } } })}\n\n`);
      },
      (msg, res) => {
        if (msg.id !== 'ask') return false;
        res.writeHead(202).end();
        const token = call!.params?._meta?.progressToken;
        waiting!.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: 1, total: 1 } })}\n\n`);
        waiting!.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: call!.id, result: { content: [{ type: 'text', text: 'went' }] } })}\n\n`);
        return true;
      },
    );
    const gw = await gatewayFor(up);
    const meta = (token: string) => ({ 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } }, progressToken: token });
    const first = modernRequest(1, 'tools/call', { name: 'go', arguments: {}, _meta: meta('p1') });
    const asked = (await post(gw.url, first.body, first.headers)).json().result;
    const [key] = Object.keys(asked.inputRequests);
    const retry = modernRequest(2, 'tools/call', { name: 'go', arguments: {}, requestState: asked.requestState, inputResponses: { [key!]: { action: 'accept', content: {} } }, _meta: meta('p2') });
    const res = await post(gw.url, retry.body, retry.headers);
    const messages = res.text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as Msg & { result?: { content: Array<{ text: string }> } });
    const progress = messages.filter((m) => m.method === 'notifications/progress');
    assert.deepEqual(progress.map((m) => m.params?.progressToken), ['p2'], res.text);
    assert.equal(messages.find((m) => m.id === 2)?.result?.content[0]?.text, 'went');
  });

  test('MRTR: a sampling request left unanswered past sessions.inputTimeoutMs gets an error upstream, not an elicitation\'s cancel', async () => {
    const up = await legacyUpstream((msg, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: 'sample-late', method: 'sampling/createMessage', params: { messages: [], maxTokens: 1 } })}\n\n`);
      void msg;
    });
    const gw = await gatewayFor(up, { sessions: { inputTimeoutMs: 300 } });
    const call = modernRequest(1, 'tools/call', { name: 'sample', arguments: {}, _meta: { 'io.modelcontextprotocol/clientCapabilities': { sampling: {} } } });
    assert.equal((await post(gw.url, call.body, call.headers)).json().result.resultType, 'input_required');
    const answer = () => up.requests.map((r) => JSON.parse(r.body || '{}') as Msg & { result?: unknown; error?: { code: number } }).find((m) => m.id === 'sample-late');
    for (let i = 0; i < 100 && answer() === undefined; i++) await sleep(20);
    assert.equal(answer()?.result, undefined, JSON.stringify(answer()));
    assert.equal(answer()?.error?.code, -32603);
  });

  test('an input type the request did not declare is refused upstream, never relayed (mrtr.mdx §Server Requirements 6)', async () => {
    const up = await legacyUpstream((msg, res) => {
      if (msg.method !== 'tools/call') return void res.writeHead(202).end();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: 'sample-1', method: 'sampling/createMessage', params: { messages: [], maxTokens: 1 } })}\n\n`);
      setTimeout(() => res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'done without sampling' }] } })}\n\n`), 200);
    });
    const gw = await gatewayFor(up);
    const call = modernRequest(1, 'tools/call', { name: 'sample', arguments: {} });
    const res = (await post(gw.url, call.body, call.headers)).json();
    assert.equal(res.result.content[0].text, 'done without sampling');
    const refusal = up.requests.map((r) => JSON.parse(r.body || '{}') as Msg & { error?: { code: number } }).find((m) => m.id === 'sample-1');
    assert.equal(refusal?.error?.code, -32601);
  });
});

describe('modern client → legacy upstream: what a retry declares', () => {
  test('a question asked after the retry is checked against the retry\'s capabilities, not the first request\'s (mrtr.mdx §Server Requirements 6)', async () => {
    let stream: ServerResponse | undefined;
    const answers = new Map<string, unknown>();
    const elicit = (id: string) => `data: ${JSON.stringify({ jsonrpc: '2.0', id, method: 'elicitation/create', params: { message: `question ${id}`, requestedSchema: { type: 'object', properties: {} } } })}\n\n`;
    let call: Msg | undefined;
    const up = await legacyUpstream((msg, res) => {
      if (msg.method !== 'tools/call') return void res.writeHead(202).end();
      call = msg;
      stream = res;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(elicit('e-1'));
    });
    // The client's answers come as POSTed responses: record them, and ask the second question after the first.
    up.server.prependListener('request', (req) => {
      if (req.method !== 'POST') return;
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const m = JSON.parse(body) as { id?: string; method?: string; result?: unknown };
        if (m.method !== undefined || typeof m.id !== 'string' || !m.id.startsWith('e-')) return;
        answers.set(m.id, m.result);
        if (m.id === 'e-1') stream!.write(elicit('e-2'));
        else stream!.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: call!.id, result: { content: [{ type: 'text', text: 'done' }] } })}\n\n`);
      });
    });
    const gw = await gatewayFor(up);
    const first = modernRequest(1, 'tools/call', { name: 'asks', arguments: {}, _meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } } } });
    const asked = (await post(gw.url, first.body, first.headers)).json().result;
    assert.equal(asked.resultType, 'input_required');
    const [key] = Object.keys(asked.inputRequests);
    // The retry declares no elicitation at all.
    const retry = modernRequest(2, 'tools/call', { name: 'asks', arguments: {}, inputResponses: { [key!]: { action: 'accept', content: {} } }, requestState: asked.requestState });
    const done = (await post(gw.url, retry.body, retry.headers)).json();
    assert.equal(done.result?.resultType, 'complete', `not asked again: ${JSON.stringify(done)}`);
    assert.deepEqual(answers.get('e-2'), { action: 'cancel' }, 'the second question was refused upstream for the retry');
  });
});

describe('modern client → legacy upstream: which server requests become an InputRequiredResult', () => {
  /** A legacy server that asks `ask` of the client during every request, then answers it anyway. */
  async function asking(ask: Msg & { id: string }) {
    return legacyUpstream((msg, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', ...ask })}\n\n`);
      const result = msg.method === 'resources/list' ? { resources: [] } : { content: [{ type: 'text', text: 'answered without it' }] };
      setTimeout(() => res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result })}\n\n`), 150);
    });
  }
  const answerTo = (up: FakeUpstream, id: string) => up.requests.map((r) => JSON.parse(r.body || '{}') as Msg & { result?: Record<string, unknown>; error?: { code: number } }).find((m) => m.id === id);

  test('only tools/call, prompts/get and resources/read may ask (mrtr.mdx §Supported Requests): a list refuses the question upstream', async () => {
    const up = await asking({ id: 'ask-list', method: 'elicitation/create', params: { message: 'name?', requestedSchema: { type: 'object', properties: {} } } });
    const gw = await gatewayFor(up);
    const list = modernRequest(1, 'resources/list', { _meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } } } });
    const res = (await post(gw.url, list.body, list.headers)).json();
    assert.deepEqual(res.result.resources, [], JSON.stringify(res));
    assert.notEqual(res.result.resultType, 'input_required');
    assert.deepEqual(answerTo(up, 'ask-list')?.result, { action: 'cancel' });
  });

  test('an elicitation in a mode the client did not declare is refused upstream (form-only client, url elicitation)', async () => {
    const up = await asking({ id: 'ask-url', method: 'elicitation/create', params: { mode: 'url', message: 'sign in', url: 'https://example.com/login', elicitationId: 'e1' } });
    const gw = await gatewayFor(up);
    const call = modernRequest(1, 'tools/call', { name: 't', arguments: {}, _meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } } } });
    const res = (await post(gw.url, call.body, call.headers)).json();
    assert.equal(res.result.content[0].text, 'answered without it', JSON.stringify(res));
    assert.deepEqual(answerTo(up, 'ask-url')?.result, { action: 'cancel' });
  });
});

describe('modern client → 2025-11-25 upstream: URL elicitation', () => {
  const URL_REQUIRED = { code: -32042, message: 'This request requires more information.', data: { elicitations: [{ mode: 'url', elicitationId: 'el-1', url: 'https://auth.example.com/connect', message: 'Authorize access to your files.' }] } };

  test('-32042 becomes an InputRequiredResult for a client that takes URL elicitations; its retry is a new request upstream', async () => {
    let calls = 0;
    const up = await legacyUpstream((msg, res) => {
      calls++;
      if (calls === 1) return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: URL_REQUIRED }));
      jsonResult(res, JSON.stringify(msg), { content: [{ type: 'text', text: 'files listed' }] });
    });
    const gw = await gatewayFor(up);
    const caps = { 'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } } };
    const first = modernRequest(1, 'tools/call', { name: 'files', arguments: {}, _meta: caps });
    const asked = await post(gw.url, first.body, first.headers);
    assert.equal(asked.status, 200, asked.text);
    const result = asked.json().result;
    assert.equal(result.resultType, 'input_required');
    assert.deepEqual(result.inputRequests, { 'url-1': { method: 'elicitation/create', params: { mode: 'url', url: 'https://auth.example.com/connect', message: 'Authorize access to your files.' } } }, 'no elicitationId: 2026-07-28 has none');
    assert.equal(result.requestState, undefined);
    assert.doesNotMatch(asked.text, /-32042/);
    const retry = modernRequest(2, 'tools/call', { name: 'files', arguments: {}, inputResponses: { 'url-1': { action: 'accept' } }, _meta: caps });
    const done = (await post(gw.url, retry.body, retry.headers)).json();
    assert.equal(done.result.content[0].text, 'files listed', JSON.stringify(done));
    const forwarded = bodies(up).filter((m) => m.method === 'tools/call');
    assert.equal(forwarded.length, 2);
    assert.equal(forwarded[1]!.params?.inputResponses, undefined, 'the legacy server never sees modern retry fields');
  });

  test('a client without URL elicitation gets -32021 naming what it lacks (HTTP 400), never -32042', async () => {
    const up = await legacyUpstream((msg, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: URL_REQUIRED })));
    const gw = await gatewayFor(up);
    const call = modernRequest(1, 'tools/call', { name: 'files', arguments: {}, _meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } } } });
    const res = await post(gw.url, call.body, call.headers);
    assert.equal(res.status, 400, res.text);
    assert.equal(res.json().error.code, -32021);
    assert.deepEqual(res.json().error.data.requiredCapabilities, { elicitation: { url: {} } });
  });

  test('a URL elicitation the server sends during a call reaches the modern client without its elicitationId', async () => {
    const up = await legacyUpstream((msg, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: 'ask-url', method: 'elicitation/create', params: { mode: 'url', elicitationId: 'el-2', url: 'https://auth.example.com/x', message: 'Sign in' } })}\n\n`);
      void msg;
    });
    const gw = await gatewayFor(up);
    const call = modernRequest(1, 'tools/call', { name: 'files', arguments: {}, _meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } } } });
    const result = (await post(gw.url, call.body, call.headers)).json().result;
    assert.equal(result.resultType, 'input_required');
    const [request] = Object.values(result.inputRequests) as Array<{ params: Record<string, unknown> }>;
    assert.deepEqual(request!.params, { mode: 'url', url: 'https://auth.example.com/x', message: 'Sign in' });
  });
});

describe('modern client → legacy upstream: a server request on the GET stream, which names no call', () => {
  /** A legacy server with a GET stream whose tools/call answers are held open until the test ends them. */
  async function withGetStream() {
    const state = { get: undefined as ServerResponse | undefined, calls: [] as Array<{ msg: Msg; res: ServerResponse }>, answers: [] as Array<Msg & { result?: unknown; error?: { code: number } }> };
    const up = await startFakeUpstream((req, res, body) => {
      if (req.method === 'DELETE') return void res.writeHead(200).end();
      if (req.method === 'GET') {
        state.get = res;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        return void res.write(': open\n\n');
      }
      const msg = JSON.parse(body) as Msg & { result?: unknown; error?: { code: number } };
      if (msg.method === 'server/discover') return void res.writeHead(400, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: Server not initialized"}}');
      if (msg.method === 'initialize') {
        return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': `get-${msg.id}` }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'get', version: '1' } } }));
      }
      if (msg.method === undefined) state.answers.push(msg);
      if (msg.method === undefined || msg.id === undefined) return void res.writeHead(202).end();
      if (msg.method === 'tools/list') return jsonResult(res, JSON.stringify(msg), { tools: [] });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': working\n\n');
      state.calls.push({ msg, res });
    }, { handshake: false });
    cleanups.push(() => up.close());
    return { up, state };
  }
  const ROOTS = { 'io.modelcontextprotocol/clientCapabilities': { roots: {} } };

  test('with two calls in flight on the session it is refused upstream, never handed to either (GATEWAY-REQUIREMENTS §16.1 "Impossible / lossy")', async () => {
    const { up, state } = await withGetStream();
    const gw = await gatewayFor(up);
    const a = modernRequest(1, 'tools/call', { name: 'a', arguments: {}, _meta: ROOTS });
    const b = modernRequest(2, 'tools/call', { name: 'b', arguments: {}, _meta: ROOTS });
    const answered = Promise.all([post(gw.url, a.body, a.headers), post(gw.url, b.body, b.headers)]);
    for (let i = 0; i < 100 && (state.calls.length < 2 || state.get === undefined); i++) await sleep(20);
    assert.equal(state.calls.length, 2);
    state.get!.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: 'roots-1', method: 'roots/list' })}\n\n`);
    for (let i = 0; i < 100 && !state.answers.some((m) => m.id === 'roots-1'); i++) await sleep(20);
    assert.equal(state.answers.find((m) => m.id === 'roots-1')?.error?.code, -32601, 'refused: no call can be told to be the one it is for');
    for (const c of state.calls) c.res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: c.msg.id, result: { content: [] } })}\n\n`);
    for (const res of await answered) assert.equal(res.json().result?.resultType, 'complete', 'neither call was asked');
  });

  test('a ping the server sends on a call\'s stream while the call waits for its client\'s retry is answered at once (L basic/utilities/ping.mdx: MUST respond promptly)', async () => {
    const { up, state } = await withGetStream();
    const gw = await gatewayFor(up);
    const call = modernRequest(1, 'tools/call', { name: 'a', arguments: {}, _meta: ROOTS });
    const first = post(gw.url, call.body, call.headers);
    for (let i = 0; i < 100 && state.calls.length < 1; i++) await sleep(20);
    state.calls[0]!.res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: 'roots-3', method: 'roots/list' })}\n\n`);
    assert.equal((await first).json().result?.resultType, 'input_required');
    // Parked: the client has its question and has not retried. The server checks the connection meanwhile.
    state.calls[0]!.res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: 'ping-1', method: 'ping' })}\n\n`);
    for (let i = 0; i < 50 && !state.answers.some((m) => m.id === 'ping-1'); i++) await sleep(20);
    assert.deepEqual(state.answers.find((m) => m.id === 'ping-1')?.result, {}, 'the ping is answered while the call is parked');
  });

  test('with one call in flight it becomes that call\'s InputRequiredResult, and the answer goes back upstream (M basic/patterns/mrtr.mdx)', async () => {
    const { up, state } = await withGetStream();
    const gw = await gatewayFor(up);
    const call = modernRequest(1, 'tools/call', { name: 'a', arguments: {}, _meta: ROOTS });
    const first = post(gw.url, call.body, call.headers);
    for (let i = 0; i < 100 && (state.calls.length < 1 || state.get === undefined); i++) await sleep(20);
    state.get!.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: 'roots-2', method: 'roots/list' })}\n\n`);
    const asked = (await first).json().result;
    assert.equal(asked?.resultType, 'input_required', JSON.stringify(asked));
    const [key] = Object.keys(asked.inputRequests);
    assert.equal(asked.inputRequests[key!].method, 'roots/list');
    const retry = modernRequest(2, 'tools/call', { name: 'a', arguments: {}, _meta: ROOTS, inputResponses: { [key!]: { roots: [{ uri: 'file:///r' }] } }, requestState: asked.requestState });
    const done = post(gw.url, retry.body, retry.headers);
    for (let i = 0; i < 100 && !state.answers.some((m) => m.id === 'roots-2'); i++) await sleep(20);
    assert.deepEqual(state.answers.find((m) => m.id === 'roots-2')?.result, { roots: [{ uri: 'file:///r' }] });
    state.calls[0]!.res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: state.calls[0]!.msg.id, result: { content: [{ type: 'text', text: 'had roots' }] } })}\n\n`);
    assert.equal((await done).json().result?.content?.[0]?.text, 'had roots');
  });
});

describe('legacy client → modern upstream (§16.2)', () => {
  async function modernUpstream(onCall: (msg: Msg, res: ServerResponse) => void, capabilities?: Record<string, unknown>): Promise<FakeUpstream> {
    const up = await startFakeUpstream((_req, res, body) => onCall(JSON.parse(body) as Msg, res), { handshake: 'modern', ...(capabilities ? { capabilities } : {}) });
    cleanups.push(() => up.close());
    return up;
  }
  const init = (id = 0, caps: Record<string, unknown> = { roots: { listChanged: true }, elicitation: {} }, version = '2025-06-18') =>
    rpc(id, 'initialize', { protocolVersion: version, capabilities: caps, clientInfo: { name: 'old-client', version: '9' } });

  async function open(gw: TestGateway): Promise<Record<string, string>> {
    const res = await post(gw.url, init());
    assert.equal(res.status, 200, res.text);
    return { ...LEGACY_HEADERS, 'mcp-session-id': String(res.headers['mcp-session-id']), 'mcp-protocol-version': '2025-06-18' };
  }

  /**
   * POSTs `call` on the legacy session, reads its stream up to the server's elicitation/create, answers it
   * with `answer` (202), and reads on until `until` is in the stream. The whole stream's text, and the question.
   */
  async function callAndAnswer(gw: TestGateway, headers: Record<string, string>, call: string, answer: Record<string, unknown>, until: string): Promise<{ text: string; ask: { id: string; params: Record<string, unknown> } }> {
    const res = await request(gw.url, { method: 'POST', headers, body: call });
    const reader = res.body[Symbol.asyncIterator]();
    const asked = await readOn(reader, '', (t) => t.includes('elicitation/create'));
    const ask = JSON.parse(/data: (\{.*"elicitation\/create".*\})/.exec(asked)![1]!) as { id: string; params: Record<string, unknown> };
    assert.equal((await post(gw.url, JSON.stringify({ jsonrpc: '2.0', id: ask.id, result: answer }), headers)).status, 202);
    return { text: await readOn(reader, asked, (t) => t.includes(until)), ask };
  }

  test('initialize is answered from server/discover; the session id is minted by Gatehouse', async () => {
    const up = await modernUpstream(() => assert.fail('initialize must not be forwarded'));
    const gw = await gatewayFor(up);
    const res = await post(gw.url, init());
    const result = res.json().result;
    assert.equal(result.protocolVersion, '2025-06-18', 'the client version is echoed when supported');
    assert.deepEqual(result.serverInfo, { name: 'fake-modern', version: '0' });
    assert.deepEqual(result.capabilities, { tools: {} });
    assert.match(String(res.headers['mcp-session-id']), /^[0-9a-f-]{36}$/);
    assert.equal(up.requests.length, 0);
  });

  test('forwarded requests carry the modern _meta and headers; results lose the modern-only fields', async () => {
    // The upstream declares logging, so the session takes a level (logging.mdx §Capabilities).
    const up = await modernUpstream((msg, res) => jsonResult(res, JSON.stringify(msg), { content: [{ type: 'text', text: 'hi' }], resultType: 'complete', _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'x' } } }), { tools: {}, logging: {} });
    const gw = await gatewayFor(up);
    const headers = await open(gw);
    assert.deepEqual((await post(gw.url, rpc(5, 'logging/setLevel', { level: 'warning' }), headers)).json().result, {});
    const res = await post(gw.url, rpc(6, 'tools/call', { name: 'météo', arguments: {} }), headers);
    // The modern-only fields are gone; the run id of the audit record is Gatehouse's own.
    const { _meta: meta, ...rest } = res.json().result as { _meta: Record<string, unknown> };
    assert.deepEqual({ ...res.json(), result: rest }, { jsonrpc: '2.0', id: 6, result: { content: [{ type: 'text', text: 'hi' }] } });
    assert.deepEqual(Object.keys(meta), ['dev.gatehouse/run_id']);
    // A call by name also makes Gatehouse list the upstream (are its names safe?); find the call itself.
    const seen = [...up.requests].reverse().find((r) => r.body.includes('"tools/call"'))!;
    const body = JSON.parse(seen.body) as Msg;
    assert.equal(seen.headers['mcp-protocol-version'], '2026-07-28');
    assert.equal(seen.headers['mcp-method'], 'tools/call');
    assert.equal(seen.headers['mcp-name'], '=?base64?bcOpdMOpbw==?=');
    assert.equal(seen.headers['mcp-session-id'], undefined);
    assert.equal(body.params?._meta['io.modelcontextprotocol/protocolVersion'], '2026-07-28');
    assert.deepEqual(body.params?._meta['io.modelcontextprotocol/clientCapabilities'], { roots: {}, elicitation: {} }, 'roots.listChanged has no modern form');
    assert.deepEqual(body.params?._meta['io.modelcontextprotocol/clientInfo'], { name: 'old-client', version: '9' });
    assert.equal(body.params?._meta['io.modelcontextprotocol/logLevel'], 'warning', 'logging/setLevel is kept per session');
  });

  test('server/discover and subscriptions/listen, which no legacy revision has, are -32601 for a legacy client and never go upstream', async () => {
    // A 2025-11-25 client's requests are the 2025-11-25 ClientRequest set (schema.json); a server of that era
    // answers a method it does not have with -32601 Method not found (JSON-RPC 2.0 §5.1; 2025-11-25
    // basic/index.mdx §Responses). The modern-only pair must not become modern requests upstream.
    const up = await modernUpstream((msg, res) => jsonResult(res, JSON.stringify(msg), { tools: [], resultType: 'complete' }));
    const gw = await gatewayFor(up);
    const headers = await open(gw);
    const listen = await request(gw.url, { method: 'POST', headers, body: rpc(1, 'subscriptions/listen', { notifications: { toolsListChanged: true } }), bodyTimeout: 3_000, headersTimeout: 3_000 });
    const listenText = await listen.body.text();
    assert.deepEqual(JSON.parse(/\{.*\}/.exec(listenText)![0]).error?.code, -32601, listenText);
    const discover = await post(gw.url, rpc(2, 'server/discover'), headers);
    assert.equal(discover.json().error?.code, -32601, discover.text);
    assert.equal(discover.json().id, 2);
    assert.equal(up.requests.filter((r) => /subscriptions\/listen|server\/discover/.test(r.body)).length, 0, 'nothing went upstream');
  });

  test('resources/subscribe, resources/unsubscribe and logging/setLevel on an upstream that declared neither resources.subscribe nor logging are -32601, not {}', async () => {
    // 2025-11-25 server/resources.mdx §Subscriptions and server/utilities/logging.mdx §Capabilities: these
    // requests exist only where the server declared the capability; without it they are a method the server
    // does not have, -32601 (the spec's answer for an undeclared capability: completion.mdx, roots.mdx
    // §Error Handling). An empty result would tell the client it is subscribed, or will get logs, when not.
    const up = await modernUpstream((msg, res) => jsonResult(res, JSON.stringify(msg), { tools: [], resultType: 'complete' }), { tools: {}, resources: {} });
    const gw = await gatewayFor(up);
    const headers = await open(gw);
    for (const [id, method, params] of [[1, 'resources/subscribe', { uri: 'file:///x' }], [2, 'resources/unsubscribe', { uri: 'file:///x' }], [3, 'logging/setLevel', { level: 'debug' }]] as const) {
      const res = await post(gw.url, rpc(id, method, params), headers);
      assert.equal(res.json().error?.code, -32601, `${method}: ${res.text}`);
      assert.equal(res.json().id, id);
    }
    // No level was kept: a later call carries none upstream.
    await post(gw.url, rpc(4, 'tools/list'), headers);
    const listed = [...up.requests].reverse().find((r) => r.body.includes('"tools/list"'))!;
    assert.equal((JSON.parse(listed.body) as Msg).params?._meta['io.modelcontextprotocol/logLevel'], undefined);
  });

  test('ping is answered by Gatehouse; -32021 becomes a legacy -32602', async () => {
    const up = await modernUpstream((msg, res) => res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32021, message: 'needs sampling', data: { requiredCapabilities: { sampling: {} } } } })));
    const gw = await gatewayFor(up);
    const headers = await open(gw);
    assert.deepEqual((await post(gw.url, rpc(1, 'ping'), headers)).json(), { jsonrpc: '2.0', id: 1, result: {} });
    assert.equal(up.requests.length, 0);
    const res = (await post(gw.url, rpc(2, 'tools/call', { name: 't', arguments: {} }), headers)).json();
    assert.equal(res.error.code, -32602);
    assert.match(res.error.message, /client capability/);
  });

  test('sessions: DELETE → 404 client_closed; past sessions.max → 404 session_cap; idle → 404 idle_timeout', async () => {
    const up = await modernUpstream((msg, res) => jsonResult(res, JSON.stringify(msg), { tools: [] }));
    const gw = await gatewayFor(up, { sessions: { max: 3, idleTimeoutMs: 1000 } });
    const closed = await open(gw);
    await request(gw.url, { method: 'DELETE', headers: closed }).then((r) => r.body.dump());
    const gone = await post(gw.url, rpc(1, 'tools/list'), closed);
    assert.equal(gone.status, 404);
    assert.deepEqual(gone.json().error, { code: -32001, message: 'Session not found; initialize a new session', data: { details: { reason: 'client_closed' } } });
    // A flood of sessions: the oldest are ended, the process keeps serving.
    const flood: Array<Record<string, string>> = [];
    for (let i = 0; i < 6; i++) flood.push(await open(gw));
    assert.equal((await post(gw.url, rpc(2, 'tools/list'), flood[0]!)).json().error.data.details.reason, 'session_cap');
    assert.equal((await post(gw.url, rpc(3, 'tools/list'), flood[5]!)).status, 200);
    await sleep(2600);
    assert.equal((await post(gw.url, rpc(4, 'tools/list'), flood[5]!)).json().error.data.details.reason, 'idle_timeout');
  });

  test('notifications/cancelled from the legacy client closes the upstream request', async () => {
    let upstreamClosed = false;
    const up = await modernUpstream((msg, res) => {
      if (msg.method === 'tools/list') return jsonResult(res, JSON.stringify(msg), { tools: [] });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': working\n\n');
      res.on('close', () => (upstreamClosed = true));
    });
    const gw = await gatewayFor(up);
    const headers = await open(gw);
    const pending = post(gw.url, rpc(77, 'tools/call', { name: 'slow', arguments: {} }), headers).catch(() => undefined);
    const calls = () => up.requests.filter((r) => r.body.includes('"tools/call"')).length;
    for (let i = 0; i < 100 && calls() === 0; i++) await sleep(20);
    const cancel = await post(gw.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 77 } }), headers);
    assert.equal(cancel.status, 202);
    for (let i = 0; i < 100 && !upstreamClosed; i++) await sleep(20);
    assert.ok(upstreamClosed, 'the upstream stream was closed');
    // The cancelled request gets no response (utilities/cancellation.mdx §Behavior Requirements): its exchange just ends.
    const answered = await pending;
    assert.ok(answered !== undefined, 'the exchange ended');
    assert.doesNotMatch(answered.text, /"id":77/, answered.text);
  });

  test('a modern server\'s URL elicitation reaches a 2025-11-25 client with the elicitationId its schema requires; the answer goes back upstream', async () => {
    let retried: Msg | undefined;
    const up = await modernUpstream((msg, res) => {
      if (msg.method === 'tools/list') return jsonResult(res, JSON.stringify(msg), { tools: [], resultType: 'complete' });
      if (msg.params?.inputResponses === undefined) {
        return jsonResult(res, JSON.stringify(msg), { resultType: 'input_required', inputRequests: { login: { method: 'elicitation/create', params: { mode: 'url', url: 'https://auth.example.com/go', message: 'Sign in' } } } });
      }
      retried = msg;
      jsonResult(res, JSON.stringify(msg), { content: [{ type: 'text', text: 'signed in' }], resultType: 'complete' });
    });
    const gw = await gatewayFor(up);
    // A 2025-11-25 session (URL elicitation is that revision's): its requests say the version it negotiated.
    const res = await post(gw.url, init(0, { elicitation: { url: {} } }, '2025-11-25'));
    const headers = { ...LEGACY_HEADERS, 'mcp-session-id': String(res.headers['mcp-session-id']), 'mcp-protocol-version': '2025-11-25' };
    const { text, ask } = await callAndAnswer(gw, headers, rpc(9, 'tools/call', { name: 'login', arguments: {} }), { action: 'accept' }, 'signed in');
    assert.equal(ask.params.mode, 'url');
    assert.equal(typeof ask.params.elicitationId, 'string');
    assert.ok((ask.params.elicitationId as string).length > 0);
    assert.match(text, /signed in/);
    assert.deepEqual(retried?.params?.inputResponses, { login: { action: 'accept' } });
  });

  test('an input request a modern server names \'__proto__\' is answered under that name (a member, not the answers\' prototype)', async () => {
    let retried: Msg | undefined;
    // Built from JSON text: an object literal would take the name as its prototype.
    const inputRequests = JSON.parse('{"__proto__":{"method":"elicitation/create","params":{"message":"Go on?","requestedSchema":{"type":"object","properties":{}}}}}') as Record<string, unknown>;
    const up = await modernUpstream((msg, res) => {
      if (msg.method === 'tools/list') return jsonResult(res, JSON.stringify(msg), { tools: [], resultType: 'complete' });
      if (msg.params?.inputResponses === undefined) return jsonResult(res, JSON.stringify(msg), { resultType: 'input_required', inputRequests });
      retried = msg;
      jsonResult(res, JSON.stringify(msg), { content: [{ type: 'text', text: 'went on' }], resultType: 'complete' });
    });
    const gw = await gatewayFor(up);
    const headers = await open(gw);
    const { text } = await callAndAnswer(gw, headers, rpc(5, 'tools/call', { name: 'odd', arguments: {} }), { action: 'accept', content: {} }, 'went on');
    assert.match(text, /went on/);
    const answers = retried?.params?.inputResponses as Record<string, unknown>;
    assert.ok(Object.hasOwn(answers, '__proto__'), JSON.stringify(answers));
    assert.deepEqual(answers['__proto__'], { action: 'accept', content: {} });
  });

  test('progress under the client\'s one token never goes back across input rounds (utilities/progress.mdx: progress MUST increase)', async () => {
    // Each round is a new request upstream; this stateless server counts from zero again on the retry.
    const sse = (res: ServerResponse, messages: unknown[]): void => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(messages.map((m) => `data: ${JSON.stringify(m)}\n\n`).join(''));
    };
    const up = await modernUpstream((msg, res) => {
      if (msg.method === 'tools/list') return jsonResult(res, JSON.stringify(msg), { tools: [], resultType: 'complete' });
      const token = msg.params?._meta?.progressToken;
      const progress = (n: number) => ({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: n } });
      if (msg.params?.inputResponses === undefined) {
        return sse(res, [progress(50), { jsonrpc: '2.0', id: msg.id, result: { resultType: 'input_required', inputRequests: { ok: { method: 'elicitation/create', params: { message: 'Go on?', requestedSchema: { type: 'object', properties: {} } } } } } }]);
      }
      sse(res, [progress(10), progress(60), { jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'finished' }], resultType: 'complete' } }]);
    });
    const gw = await gatewayFor(up);
    const headers = await open(gw);
    const { text } = await callAndAnswer(gw, headers, rpc(4, 'tools/call', { name: 'steps', arguments: {}, _meta: { progressToken: 'mine' } }), { action: 'accept', content: {} }, 'finished');
    const progress = text.split('\n').filter((l) => l.startsWith('data: ') && l.includes('notifications/progress')).map((l) => (JSON.parse(l.slice(6)) as { params: { progress: number; progressToken: string } }).params);
    assert.deepEqual(progress, [{ progressToken: 'mine', progress: 50 }, { progressToken: 'mine', progress: 60 }], 'the retry\'s 10 is dropped, its 60 passes');
    assert.match(text, /finished/);
  });

  test('the client\'s notifications/cancelled during an input round ends the MRTR loop: no further question, no further round upstream', async () => {
    // GATEWAY-REQUIREMENTS §16.2 Cancellation: "... and abort any MRTR loop" (utilities/cancellation.mdx).
    let calls = 0;
    const ask = (message: string) => ({ method: 'elicitation/create', params: { message, requestedSchema: { type: 'object', properties: {} } } });
    const up = await modernUpstream((msg, res) => {
      if (msg.method === 'tools/list') return jsonResult(res, JSON.stringify(msg), { tools: [], resultType: 'complete' });
      calls++;
      jsonResult(res, JSON.stringify(msg), { resultType: 'input_required', inputRequests: { first: ask('First question?'), second: ask('Second question?') } });
    });
    const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url }], sessions: { inputTimeoutMs: 20_000 } });
    cleanups.push(() => gw.close());
    const headers = await open(gw);
    const call = await request(gw.url, { method: 'POST', headers, body: rpc(8, 'tools/call', { name: 'asks', arguments: {} }) });
    let text = '';
    const reader = call.body[Symbol.asyncIterator]();
    text = await readOn(reader, text, (t) => t.includes('First question?'));
    assert.equal((await post(gw.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 8 } }), headers)).status, 202);
    // Causal, not timed: the stream must end by itself; a read still open after 12 s (the input wait is
    // 20 s, so an exchange it ended would still be open then) stops the loop without counting as its end.
    let ended = false;
    for (let i = 0; i < 50; i++) {
      const next = await Promise.race([reader.next(), new Promise<'still open'>((r) => setTimeout(r, 12_000, 'still open').unref())]);
      if (next === 'still open') break;
      if (next.done) {
        ended = true;
        break;
      }
      text += String(next.value);
    }
    assert.ok(ended, 'the exchange ended at once, not after the input wait');
    assert.doesNotMatch(text, /Second question\?/, 'the second question was not asked');
    assert.doesNotMatch(text, /"id":8/, 'a cancelled request gets no response');
    await sleep(200);
    assert.equal(calls, 1, 'no further round went upstream');
  });

  test('a client that answers the server\'s question with an error ends the call with an error: it is not asked again, round after round', async () => {
    // An error has no inputResponses slot (GATEWAY-REQUIREMENTS §16.2 "Impossible / lossy"), and a modern
    // server SHOULD ask again for what is missing (mrtr.mdx §Error Handling): left out, the same question came
    // back up to 10 times, each refused alike. The client's refusal is its answer: the call ends there.
    let calls = 0;
    const up = await modernUpstream((msg, res) => {
      if (msg.method === 'tools/list') return jsonResult(res, JSON.stringify(msg), { tools: [], resultType: 'complete' });
      calls++;
      jsonResult(res, JSON.stringify(msg), { resultType: 'input_required', inputRequests: { who: { method: 'elicitation/create', params: { message: 'Who are you?', requestedSchema: { type: 'object', properties: {} } } } } });
    });
    const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url }], sessions: { inputTimeoutMs: 3_000 } });
    cleanups.push(() => gw.close());
    const headers = await open(gw);
    const call = await request(gw.url, { method: 'POST', headers, body: rpc(12, 'tools/call', { name: 'asks', arguments: {} }) });
    let text = '';
    const reader = call.body[Symbol.asyncIterator]();
    text = await readOn(reader, text, (t) => t.includes('Who are you?'));
    const ask = JSON.parse(/data: (\{.*"elicitation\/create".*\})/.exec(text)![1]!) as { id: string };
    const refusal = { jsonrpc: '2.0', id: ask.id, error: { code: -32603, message: 'the user interface failed' } };
    assert.equal((await post(gw.url, JSON.stringify(refusal), headers)).status, 202);
    for (let i = 0; i < 50 && !/"id":12/.test(text); i++) {
      const next = await Promise.race([reader.next(), sleep(5_000).then(() => ({ done: true, value: undefined }))]);
      if (next.done) break;
      text += String(next.value);
    }
    assert.equal(text.match(/"method":"elicitation\/create"/g)?.length, 1, `asked once only: ${text}`);
    const answer = JSON.parse(/data: (\{.*"id":12.*\})/.exec(text)![1]!) as { error?: { code: number; message: string } };
    assert.equal(answer.error?.code, -32603, text);
    assert.match(answer.error!.message, /elicitation\/create/);
    assert.equal(calls, 1, 'no further round went upstream');
  });

  test('a -32020 after the tool\'s x-mcp-header changed is handled by Gatehouse: a fresh list, then the call once more with the new header (GATEWAY-REQUIREMENTS §16.2)', async () => {
    const { up, setHeader, calls } = await startChangingHeaderUpstream();
    cleanups.push(() => up.close());
    const gw = await gatewayFor(up);
    const headers = await open(gw);
    const call = async (id: number) => (await post(gw.url, rpc(id, 'tools/call', { name: 'geo', arguments: { place: 'eu' } }), headers)).json();
    assert.equal((await call(1)).result?.content?.[0]?.text, 'at eu');
    // The upstream now wants the value in another header; Gatehouse's list (kept 60 s) still names the old one.
    setHeader('Zone');
    const answer = await call(2);
    assert.equal(answer.result?.content?.[0]?.text, 'at eu', JSON.stringify(answer));
    assert.deepEqual(calls, ['eu', undefined, 'eu'], 'refused once, then sent again with Mcp-Param-Zone');
  });

  test('a result type the bridge does not know is an error for the legacy client, never a stripped success (basic/index.mdx §ResultType)', async () => {
    const up = await modernUpstream((msg, res) => {
      if (msg.method === 'tools/list') return jsonResult(res, JSON.stringify(msg), { tools: [], resultType: 'complete' });
      jsonResult(res, JSON.stringify(msg), { resultType: 'task', task: { id: 't-1' } });
    });
    const gw = await gatewayFor(up);
    const headers = await open(gw);
    const res = (await post(gw.url, rpc(3, 'tools/call', { name: 'later', arguments: {} }), headers)).json();
    assert.equal(res.id, 3);
    assert.equal(res.result, undefined);
    assert.equal(res.error?.data?.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE');
    assert.match(res.error?.message, /result type Gatehouse does not know: "?task"?/);
  });

  test('tools with an invalid x-mcp-header annotation are left out of the legacy client\'s list (server/tools.mdx §x-mcp-header: HTTP clients MUST drop them)', async () => {
    const tools = [
      { name: 'good', inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } } } },
      // x-mcp-header is for integers, strings and booleans, not `number`.
      { name: 'bad', inputSchema: { type: 'object', properties: { ratio: { type: 'number', 'x-mcp-header': 'Ratio' } } } },
    ];
    const up = await modernUpstream((msg, res) => jsonResult(res, JSON.stringify(msg), msg.method === 'tools/list' ? { tools, resultType: 'complete', ttlMs: 0 } : { content: [], resultType: 'complete' }));
    const gw = await gatewayFor(up);
    const headers = await open(gw);
    const listed = (await post(gw.url, rpc(3, 'tools/list'), headers)).json().result.tools as Array<{ name: string }>;
    assert.deepEqual(listed.map((t) => t.name), ['good']);
    assert.ok(gw.logs.some((l) => typeof l.msg === 'string' && l.msg.includes('invalid x-mcp-header') && l.tool === 'bad'), 'the drop is logged with the tool');
  });

  test('a legacy client that disconnects mid-call does not cancel it: the modern upstream finishes its run (LT §Sending Messages 6)', async () => {
    let closedEarly = false;
    let finished = false;
    const up = await modernUpstream((msg, res) => {
      if (msg.method === 'tools/list') return jsonResult(res, JSON.stringify(msg), { tools: [] });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': working\n\n');
      // A modern server reads a closed request stream as a cancellation (streamable-http.mdx §Cancellation).
      res.on('close', () => {
        if (!finished) closedEarly = true;
      });
      setTimeout(() => {
        finished = true;
        res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'done' }], resultType: 'complete' } })}\n\n`);
      }, 400);
    });
    const gw = await gatewayFor(up);
    const headers = await open(gw);
    const leaving = new AbortController();
    const gone = post(gw.url, rpc(78, 'tools/call', { name: 'slow', arguments: {} }), headers, leaving.signal).catch(() => undefined);
    const calls = () => up.requests.filter((r) => r.body.includes('"tools/call"')).length;
    for (let i = 0; i < 100 && calls() === 0; i++) await sleep(20);
    leaving.abort();
    await gone;
    for (let i = 0; i < 100 && !finished; i++) await sleep(20);
    assert.ok(finished, 'the upstream answered');
    assert.equal(closedEarly, false, 'the upstream request was not closed before its answer');
    // The session goes on.
    assert.equal((await post(gw.url, rpc(79, 'ping'), headers)).status, 200);
  });
});
