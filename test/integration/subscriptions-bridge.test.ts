// Subscriptions across eras (2026-07-28/basic/patterns/subscriptions.mdx; GATEWAY-REQUIREMENTS §9, §16.1,
// §16.2): a modern subscriptions/listen served from a legacy GET stream + resources/subscribe, and a legacy
// GET stream served from a modern subscriptions/listen.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { request } from 'undici';
import { jsonResult, sleep, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, modernRequest, post, rpc } from '../helpers/http.js';
import { readSseUntil as readEvents } from '../helpers/sse.js';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});


/**
 * A legacy server with a GET stream the test can write to, tools.listChanged and resources.subscribe; the
 * requests after initialize go to `onCall` (notifications are accepted with 202 before it).
 */
async function subscribableUpstream(name: string, onCall: (msg: { id?: unknown; method?: string; params?: { uri?: string } }, res: ServerResponse, body: string) => void) {
  let getStream: ServerResponse | undefined;
  const up = await startFakeUpstream((req, res, body) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': open\n\n');
      getStream = res;
      return;
    }
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    const msg = JSON.parse(body) as { id?: unknown; method?: string; params?: { uri?: string } };
    if (msg.method === 'initialize') {
      const text = JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: { listChanged: true }, resources: { subscribe: true } }, serverInfo: { name, version: '1' } } });
      return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's-1' }).end(text);
    }
    onCall(msg, res, body);
  }, { handshake: false });
  cleanups.push(() => up.close());
  return { up, getStream: () => getStream };
}

describe('modern subscriptions/listen → legacy upstream', () => {
  test('nothing comes before the acknowledgment: a change heard while the listen subscribes follows it (subscriptions.mdx §Acknowledgment)', async () => {
    let subscribing: (() => void) | undefined;
    const { up, getStream } = await subscribableUpstream('slow-subscribe', (msg, res, body) => {
      if (msg.id === undefined) return void res.writeHead(202).end();
      // The subscribe is answered only when the test says so: meanwhile the GET stream carries a change.
      if (msg.method === 'resources/subscribe') return void (subscribing = () => jsonResult(res, body, {}));
      jsonResult(res, body, {});
    });
    const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }] });
    cleanups.push(() => gw.close());
    const first = modernRequest(1, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
    const ac = new AbortController();
    cleanups.push(async () => ac.abort());
    const one = await request(gw.url, { method: 'POST', headers: first.headers, body: first.body, signal: ac.signal });
    assert.equal((await readEvents(one.body, (m) => m.length >= 1))[0]?.method, 'notifications/subscriptions/acknowledged');
    for (let i = 0; i < 100 && !getStream(); i++) await sleep(20);
    const second = modernRequest(2, 'subscriptions/listen', { notifications: { toolsListChanged: true, resourceSubscriptions: ['file:///a'] } });
    // The headers come at once, before the subscribe is answered: a listen is a stream from its start.
    const answered = request(gw.url, { method: 'POST', headers: second.headers, body: second.body, signal: ac.signal });
    for (let i = 0; i < 100 && !subscribing; i++) await sleep(20);
    const early = await Promise.race([answered.then((r) => r.statusCode), sleep(2_000).then(() => 'no headers yet')]);
    assert.equal(early, 200, 'the listen answered its headers before the upstream answered the subscribe');
    getStream()!.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })}\n\n`);
    await sleep(100);
    subscribing!();
    const two = await answered;
    const messages = await readEvents(two.body, (m) => m.length >= 2);
    assert.deepEqual(messages.map((m) => m.method), ['notifications/subscriptions/acknowledged', 'notifications/tools/list_changed']);
    assert.deepEqual(messages[0]!.params.notifications, { toolsListChanged: true, resourceSubscriptions: ['file:///a'] });
  });

  test('ack with the honoured subset first, then matching notifications tagged with the subscription id', async () => {
    const subscribed: string[] = [];
    const { up, getStream: stream } = await subscribableUpstream('legacy-subs', (msg, res, body) => {
      if (msg.method === 'resources/subscribe') subscribed.push(msg.params!.uri!);
      if (msg.id === undefined) return void res.writeHead(202).end();
      // A resource the server will not let anyone subscribe to.
      if (msg.method === 'resources/subscribe' && msg.params?.uri === 'file:///refused') {
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32002, message: 'Resource not found' } }));
      }
      jsonResult(res, body, {});
    });
    const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }] });
    cleanups.push(() => gw.close());
    const listen = modernRequest(7, 'subscriptions/listen', { notifications: { toolsListChanged: true, promptsListChanged: true, resourceSubscriptions: ['file:///a', 'file:///refused'] } });
    const ac = new AbortController();
    const res = await request(gw.url, { method: 'POST', headers: listen.headers, body: listen.body, signal: ac.signal });
    assert.equal(res.headers['content-type'], 'text/event-stream');
    const first = await readEvents(res.body, (m) => m.length >= 1);
    assert.deepEqual(first[0], {
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 7 }, notifications: { toolsListChanged: true, resourceSubscriptions: ['file:///a'] } },
    }, 'prompts are not honoured: the upstream has no prompts.listChanged; nor is the resource it refused to subscribe to');
    for (let i = 0; i < 100 && (!stream() || subscribed.length === 0); i++) await sleep(20);
    assert.deepEqual(subscribed, ['file:///a', 'file:///refused'], 'both were asked for, before the acknowledgment');
    stream()!.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/prompts/list_changed' })}\n\n`);
    stream()!.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'file:///other' } })}\n\n`);
    stream()!.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })}\n\n`);
    stream()!.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'file:///a' } })}\n\n`);
    const more = await readEvents(res.body, (m) => m.length >= 2);
    assert.deepEqual(more, [
      { jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 7 } } },
      { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'file:///a', _meta: { 'io.modelcontextprotocol/subscriptionId': 7 } } },
    ]);
    ac.abort();
    for (let i = 0; i < 100 && !up.requests.some((r) => r.body.includes('resources/unsubscribe')); i++) await sleep(20);
    assert.ok(up.requests.some((r) => r.body.includes('resources/unsubscribe')), 'closing the listen unsubscribes upstream');
  });
});

describe('modern subscriptions/listen → legacy upstream: how many sessions a caller listens on', () => {
  test('a caller listens with at most 4 capability sets at once: the 5th is refused (listen_cap), more listens on an open set are not, and an ended one makes room', async () => {
    // Each capability set is a legacy session of its own (GATEWAY-REQUIREMENTS §16.1 "Session management"),
    // and each session's GET stream (2025-11-25/basic/transports.mdx §Listening for Messages) holds a pooled
    // connection for as long as its listens last. Unbounded, one caller's listens could take the whole pool.
    const { up } = await subscribableUpstream('listened', (msg, res, body) => {
      if (msg.id === undefined) return void res.writeHead(202).end();
      jsonResult(res, body, msg.method === 'tools/list' ? { tools: [] } : {});
    });
    const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }] });
    cleanups.push(() => gw.close());
    const streams: AbortController[] = [];
    cleanups.push(async () => streams.forEach((ac) => ac.abort()));
    // Five capability sets the bridge declares upstream as they are (it declares only what it carries:
    // sampling, elicitation, roots; bridge-capabilities.test.ts).
    const SETS: Array<Record<string, unknown>> = [{}, { sampling: {} }, { elicitation: {} }, { roots: {} }, { sampling: {}, elicitation: {} }];
    /** Opens a listen declaring capability set `set` (1–5), and returns its first message. */
    const listen = async (id: number, set: number) => {
      const req = modernRequest(id, 'subscriptions/listen', { notifications: { toolsListChanged: true }, _meta: { 'io.modelcontextprotocol/clientCapabilities': SETS[set - 1] } });
      const ac = new AbortController();
      streams.push(ac);
      const res = await request(gw.url, { method: 'POST', headers: req.headers, body: req.body, signal: ac.signal });
      return { ac, first: (await readEvents(res.body, (m) => m.length >= 1))[0] };
    };
    for (let set = 1; set <= 4; set++) assert.equal((await listen(set, set)).first?.method, 'notifications/subscriptions/acknowledged', `set ${set}`);
    const fifth = await listen(5, 5);
    assert.equal(fifth.first?.id, 5);
    assert.equal(fifth.first?.error?.code, -32600);
    assert.deepEqual(fifth.first?.error?.data, { details: { reason: 'listen_cap' } });
    assert.match(fifth.first?.error?.message, /4 capability sets/);
    // Another listen on a set already listened with shares its session's stream: admitted.
    const again = await listen(6, 2);
    assert.equal(again.first?.method, 'notifications/subscriptions/acknowledged');
    const gets = (): number => up.requests.filter((r) => r.method === 'GET').length;
    assert.equal(gets(), 4, 'one GET stream per listened set');
    // Ending every listen of set 1 makes room for set 5.
    streams[0]!.abort();
    let admitted: Awaited<ReturnType<typeof listen>> | undefined;
    for (let i = 0; i < 50; i++) {
      admitted = await listen(100 + i, 5);
      if (admitted.first?.method === 'notifications/subscriptions/acknowledged') break;
      admitted.ac.abort();
      await sleep(50);
    }
    assert.equal(admitted?.first?.method, 'notifications/subscriptions/acknowledged');
  });
});

describe('modern subscriptions/listen → legacy upstream that forgets the session', () => {
  test('the listen ends with its result (not silence), and a new listen gets a new session', async () => {
    let getStream: ServerResponse | undefined;
    const live = new Set<string>();
    let sessions = 0;
    const up = await startFakeUpstream((req, res, body) => {
      const sid = String(req.headers['mcp-session-id']);
      if (req.method === 'GET') {
        if (!live.has(sid)) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}');
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(': open\n\n');
        getStream = res;
        return;
      }
      if (req.method === 'DELETE') return void res.writeHead(200).end();
      const msg = JSON.parse(body) as { id?: unknown; method?: string };
      if (msg.method === 'initialize') {
        const id = `s-gone-${++sessions}`;
        live.add(id);
        const text = JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'forgets', version: '1' } } });
        return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': id }).end(text);
      }
      if (msg.id === undefined) return void res.writeHead(202).end();
      jsonResult(res, body, {});
    }, { handshake: false });
    cleanups.push(() => up.close());
    const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }] });
    cleanups.push(() => gw.close());
    const listen = modernRequest(8, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
    const res = await request(gw.url, { method: 'POST', headers: listen.headers, body: listen.body });
    const ack = await readEvents(res.body, (m) => m.length >= 1);
    assert.equal(ack[0]?.method, 'notifications/subscriptions/acknowledged');
    for (let i = 0; i < 100 && !getStream; i++) await sleep(20);
    const before = sessions;
    // The upstream forgets every session and drops the GET stream.
    live.clear();
    getStream!.end();
    const rest = await readEvents(res.body, (m) => m.some((x) => x.id === 8), 6000);
    const final = rest.find((m) => m.id === 8);
    assert.equal(final?.result?.resultType, 'complete', JSON.stringify(rest));
    assert.equal(final?.result?._meta?.['io.modelcontextprotocol/subscriptionId'], 8);
    // Listening again opens a new upstream session.
    const again = modernRequest(9, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
    const res2 = await request(gw.url, { method: 'POST', headers: again.headers, body: again.body });
    const ack2 = await readEvents(res2.body, (m) => m.length >= 1);
    assert.equal(ack2[0]?.method, 'notifications/subscriptions/acknowledged');
    assert.ok(sessions > before, 'a new upstream session');
    res2.body.destroy();
  });
});

describe('legacy GET stream → modern upstream', () => {
  test('the GET stream is fed by subscriptions/listen; resources/subscribe reopens it with the new filter', async () => {
    const listens: Array<{ filter: Record<string, unknown>; res: ServerResponse }> = [];
    const up = await startFakeUpstream((_req, res, body) => {
      const msg = JSON.parse(body) as { id: string; method: string; params: { notifications: Record<string, unknown> } };
      if (msg.method === 'server/discover') {
        // A modern upstream whose discover advertises list changes and subscriptions.
        return jsonResult(res, body, { supportedVersions: ['2026-07-28'], capabilities: { tools: { listChanged: true }, resources: { listChanged: true, subscribe: true } }, resultType: 'complete', ttlMs: 0, cacheScope: 'public' });
      }
      if (msg.method !== 'subscriptions/listen') return jsonResult(res, body, { tools: [] });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': msg.id }, notifications: msg.params.notifications } })}\n\n`);
      listens.push({ filter: msg.params.notifications, res });
    }, { handshake: false });
    cleanups.push(() => up.close());
    const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }] });
    cleanups.push(() => gw.close());
    const init = await post(gw.url, rpc(0, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'old', version: '1' } }));
    assert.equal(init.status, 200, init.text);
    const headers = { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': '2025-11-25' };
    const stream = await request(gw.url, { method: 'GET', headers: { ...headers, accept: 'text/event-stream' } });
    assert.equal(stream.statusCode, 200);
    for (let i = 0; i < 100 && listens.length === 0; i++) await sleep(20);
    assert.deepEqual(listens[0]!.filter, { toolsListChanged: true, resourcesListChanged: true });
    listens[0]!.res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 'x' } } })}\n\n`);
    const got = await readEvents(stream.body, (m) => m.length >= 1);
    assert.deepEqual(got[0], { jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: {} }, 'the subscription id is not shown to a legacy client');
    const sub = await post(gw.url, rpc(1, 'resources/subscribe', { uri: 'file:///x' }), headers);
    assert.deepEqual(sub.json(), { jsonrpc: '2.0', id: 1, result: {} });
    for (let i = 0; i < 100 && listens.length < 2; i++) await sleep(20);
    assert.deepEqual(listens[1]!.filter, { toolsListChanged: true, resourcesListChanged: true, resourceSubscriptions: ['file:///x'] });
    for (let i = 0; i < 100 && !listens[0]!.res.destroyed; i++) await sleep(20);
    assert.ok(listens[0]!.res.destroyed, 'the old listen is closed once the new one is open');
    listens[1]!.res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'file:///x' } })}\n\n`);
    const updated = await readEvents(stream.body, (m) => m.length >= 1);
    assert.equal(updated[0]?.method, 'notifications/resources/updated');
    stream.body.destroy();
  });
});

describe('legacy GET stream → modern upstream: a listen the upstream ends', () => {
  test('is reopened, and the client is told to refetch the lists it covers, since changes in between went unheard', async () => {
    const listens: ServerResponse[] = [];
    const up = await startFakeUpstream((_req, res, body) => {
      const msg = JSON.parse(body) as { id: string; method: string; params: { notifications: Record<string, unknown> } };
      if (msg.method === 'server/discover') {
        return jsonResult(res, body, { supportedVersions: ['2026-07-28'], capabilities: { tools: { listChanged: true }, prompts: { listChanged: true } }, resultType: 'complete', ttlMs: 0, cacheScope: 'public' });
      }
      if (msg.method !== 'subscriptions/listen') return jsonResult(res, body, { tools: [] });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': msg.id }, notifications: msg.params.notifications } })}\n\n`);
      listens.push(res);
      // The first listen is ended by the server at once (subscriptions.mdx §Graceful Closure).
      if (listens.length === 1) res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { resultType: 'complete' } })}\n\n`);
    }, { handshake: false });
    cleanups.push(() => up.close());
    const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }] });
    cleanups.push(() => gw.close());
    const init = await post(gw.url, rpc(0, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'old', version: '1' } }));
    const headers = { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': '2025-11-25' };
    const stream = await request(gw.url, { method: 'GET', headers: { ...headers, accept: 'text/event-stream' } });
    assert.equal(stream.statusCode, 200);
    const got = await readEvents(stream.body, (m) => m.length >= 2);
    assert.equal(listens.length, 2, 'reopened after the pause');
    assert.deepEqual(got.map((m) => m.method).sort(), ['notifications/prompts/list_changed', 'notifications/tools/list_changed']);
    stream.body.destroy();
  });
});

describe('shutdown', () => {
  test('an open subscriptions/listen does not hold up the drain: it is ended, not waited for', async () => {
    const up = await startFakeUpstream((req, res, body) => {
      if (req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(': open\n\n');
        return;
      }
      if (req.method === 'DELETE') return void res.writeHead(200).end();
      const msg = JSON.parse(body) as { id?: unknown; method?: string };
      if (msg.method === 'initialize') {
        const text = JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'l', version: '1' } } });
        return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's-2' }).end(text);
      }
      if (msg.id === undefined) return void res.writeHead(202).end();
      jsonResult(res, body, {});
    }, { handshake: false });
    cleanups.push(() => up.close());
    const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }], shutdown: { graceMs: 1500 } });
    const listen = modernRequest(1, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
    const res = await request(gw.url, { method: 'POST', headers: listen.headers, body: listen.body });
    await readEvents(res.body, (m) => m.length >= 1);
    await gw.close();
    assert.ok(!gw.logs.some((l) => l.msg === 'grace period over; closing the requests still in flight'), 'the drain did not wait for the listen stream');
    assert.ok(gw.logs.some((l) => l.msg === 'shutting down: draining in-flight requests' && l.inFlight === 0));
  });
});

describe('how many resource subscriptions Gatehouse makes for a client (256 per listen or session)', () => {
  // Each honoured URI is a resources/subscribe upstream (legacy) or a name in a listen opened again on
  // every change (modern): one request naming a hundred thousand cost the upstream as many requests, until
  // 3 December. The acknowledgment names what is honoured (subscriptions.mdx §Acknowledgment).
  test('modern listen → legacy upstream: 1,000 URIs, 256 subscribed and acknowledged', async () => {
    const subscribed: string[] = [];
    const { up } = await subscribableUpstream('legacy-many', (msg, res, body) => {
      if (msg.method === 'resources/subscribe') subscribed.push(msg.params!.uri!);
      if (msg.id === undefined) return void res.writeHead(202).end();
      jsonResult(res, body, {});
    });
    const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }] });
    cleanups.push(() => gw.close());
    const uris = Array.from({ length: 1_000 }, (_, i) => `file:///r/${i}`);
    const listen = modernRequest(8, 'subscriptions/listen', { notifications: { resourceSubscriptions: uris } });
    const ac = new AbortController();
    const res = await request(gw.url, { method: 'POST', headers: listen.headers, body: listen.body, signal: ac.signal });
    const first = await readEvents(res.body, (m) => m.length >= 1, 20_000);
    assert.equal(first[0]?.method, 'notifications/subscriptions/acknowledged');
    assert.deepEqual(first[0]?.params?.notifications?.resourceSubscriptions, uris.slice(0, 256));
    assert.equal(subscribed.length, 256);
    ac.abort();
  });

  test('legacy client → modern upstream: the 257th resources/subscribe of a session is refused, -32602; an unsubscribe makes room', async () => {
    const listens: Array<Record<string, unknown>> = [];
    const up = await startFakeUpstream((_req, res, body) => {
      const msg = JSON.parse(body) as { id: string; method: string; params: { notifications: Record<string, unknown> } };
      if (msg.method === 'server/discover') return jsonResult(res, body, { supportedVersions: ['2026-07-28'], capabilities: { resources: { subscribe: true } }, resultType: 'complete', ttlMs: 0, cacheScope: 'public' });
      if (msg.method !== 'subscriptions/listen') return jsonResult(res, body, { tools: [] });
      listens.push(msg.params.notifications);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': msg.id }, notifications: msg.params.notifications } })}\n\n`);
    }, { handshake: false });
    cleanups.push(() => up.close());
    const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }] });
    cleanups.push(() => gw.close());
    const init = await post(gw.url, rpc(0, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'old', version: '1' } }));
    const headers = { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': '2025-11-25' };
    for (let i = 0; i < 256; i++) {
      const sub = await post(gw.url, rpc(i + 1, 'resources/subscribe', { uri: `file:///r/${i}` }), headers);
      assert.deepEqual(sub.json().result, {}, sub.text);
    }
    // Subscribing again to one it holds is no new subscription.
    assert.deepEqual((await post(gw.url, rpc(300, 'resources/subscribe', { uri: 'file:///r/0' }), headers)).json().result, {});
    const over = await post(gw.url, rpc(301, 'resources/subscribe', { uri: 'file:///r/256' }), headers);
    assert.equal(over.json().error?.code, -32602, over.text);
    assert.match(over.json().error.message, /holds 256 resource subscriptions/);
    await post(gw.url, rpc(302, 'resources/unsubscribe', { uri: 'file:///r/0' }), headers);
    assert.deepEqual((await post(gw.url, rpc(303, 'resources/subscribe', { uri: 'file:///r/256' }), headers)).json().result, {});
  });
});
