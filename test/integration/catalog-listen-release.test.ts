// A listen through the catalog lets go when its client does (found by the edge fuzzer: every modern
// subscriptions/listen and legacy GET stream over two upstreams kept its request, response and upstream
// stream alive after the client hung up). A legacy member serves the listen from its session's shared GET
// stream and reference-counted resources/subscribe (GATEWAY-REQUIREMENTS §16.1 "Subscriptions ⇄ GET
// stream"); when the client leaves, its listener must leave the session's hub, which the upstream sees as
// resources/unsubscribe for the URIs only that listen wanted. (The GET stream itself stays: the catalog's
// own background listen shares it.)

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { request } from 'undici';
import { jsonResult, startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest } from '../helpers/http.js';

/** A legacy upstream whose sessions offer a GET stream and resource subscriptions; it counts what is subscribed. */
async function legacyWithGetStream(name: string): Promise<{ up: FakeUpstream; subscribed: Map<string, number> }> {
  const streams = new Set<ServerResponse>();
  const subscribed = new Map<string, number>();
  const up = await startFakeUpstream((req, res, body) => {
    if (req.method === 'GET') {
      streams.add(res);
      res.on('close', () => streams.delete(res));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': open\n\n');
      return;
    }
    if (req.method === 'DELETE' || body === '') return void res.writeHead(200).end();
    const msg = JSON.parse(body) as { id?: unknown; method: string; params?: { uri?: string } };
    if (msg.id === undefined) return void res.writeHead(202).end();
    if (msg.method === 'initialize') return jsonResult(res, body, { protocolVersion: '2025-11-25', capabilities: { tools: { listChanged: true }, resources: { subscribe: true } }, serverInfo: { name, version: '1' } }, { 'mcp-session-id': `${name}-session` });
    if (msg.method === 'resources/subscribe') subscribed.set(msg.params!.uri!, (subscribed.get(msg.params!.uri!) ?? 0) + 1);
    if (msg.method === 'resources/unsubscribe') subscribed.set(msg.params!.uri!, (subscribed.get(msg.params!.uri!) ?? 0) - 1);
    if (msg.method === 'tools/list') return jsonResult(res, body, { tools: [{ name: `${name}_tool`, inputSchema: { type: 'object' } }] });
    jsonResult(res, body, {});
  });
  return { up, subscribed };
}

const a = await legacyWithGetStream('a');
const b = await legacyWithGetStream('b');
const gw = await startGateway({ upstreams: [{ name: 'a', url: a.up.url, era: 'legacy' }, { name: 'b', url: b.up.url, era: 'legacy' }] });
after(async () => {
  await gw.close();
  await a.up.close();
  await b.up.close();
});

test('a modern listen over two legacy upstreams: when the client hangs up, its subscriptions are given back', { timeout: 30_000 }, async () => {
  for (let round = 0; round < 3; round++) {
    const uri = `file:///round/${round}`;
    const listen = modernRequest(`listen-${round}`, 'subscriptions/listen', { notifications: { resourceSubscriptions: [uri] } });
    const hangUp = new AbortController();
    const res = await request(gw.url, { method: 'POST', headers: listen.headers, body: listen.body, signal: hangUp.signal });
    assert.equal(res.statusCode, 200);
    // Read until the acknowledgement: by then both members listen.
    // (Read by events: leaving a for-await loop would destroy the body, hanging up early.)
    await new Promise<void>((resolve) => {
      let seen = '';
      res.body.on('data', (chunk: Buffer) => {
        seen += String(chunk);
        if (seen.includes('notifications/subscriptions/acknowledged')) resolve();
      });
    });
    res.body.on('error', () => {});
    // The members subscribe right after acknowledging: bounded wait.
    for (let i = 0; i < 60 && (a.subscribed.get(uri) !== 1 || b.subscribed.get(uri) !== 1); i++) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual([a.subscribed.get(uri), b.subscribed.get(uri)], [1, 1], 'each upstream was subscribed for the listen');
    hangUp.abort();
    for (let i = 0; i < 60 && (a.subscribed.get(uri) !== 0 || b.subscribed.get(uri) !== 0); i++) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual([a.subscribed.get(uri), b.subscribed.get(uri)], [0, 0], `round ${round}: both upstreams were unsubscribed once the client left`);
  }
});
