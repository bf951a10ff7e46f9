// Names that every JavaScript object answers to (`constructor`, `toString`, `__proto__`), sent as a method
// or a capability, are names like any other. A modern request with the method `constructor` found
// `Object.prototype.constructor` in the table of name-bearing methods and was answered 500 (found by the
// edge fuzzer, seed 977520417); an upstream's capability named `__proto__` was merged into the prototype
// every object of the gateway shares. Every era and every kind of upstream is asked here.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, legacySession, modernRequest, post, rpc } from '../helpers/http.js';
import { startPollingServer, type PollingServer } from '../fixtures/upstreams/polling-server.js';
import { startModernServer, type ModernServer } from '../fixtures/upstreams/modern-server.js';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';

const INHERITED = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__', 'isPrototypeOf'];

/** A modern request for `method`, with a name in its params and its Mcp-Name header, as the fuzzer sent. */
function modernCall(id: number, method: string) {
  const req = modernRequest(id, method, { name: 'echo', arguments: { text: '' } });
  return { body: req.body, headers: { ...req.headers, 'mcp-name': 'echo' } };
}

/** Answers with a structured JSON-RPC error for the request, never a failure of Gatehouse's own. */
function assertRefusedCleanly(res: { status: number; headers: Record<string, unknown>; text: string; json(): Record<string, any> }, what: string): void {
  assert.ok(res.status < 500, `${what}: HTTP ${res.status} ${res.text}`);
  // A legacy server may answer on an SSE stream (after a priming event with no data): its last event is the answer.
  const data = [...res.text.matchAll(/^data: ?(.+)$/gm)].at(-1)?.[1];
  const body = String(res.headers['content-type']).startsWith('text/event-stream') && data !== undefined ? (JSON.parse(data) as Record<string, any>) : res.json();
  assert.equal(body.jsonrpc, '2.0', what);
  assert.ok(body.error !== undefined, `${what}: ${res.text}`);
  assert.notEqual(body.error.code, -32603, `${what}: ${res.text}`);
}

let legacyUp: PollingServer;
let modernUp: ModernServer;
const fakes: FakeUpstream[] = [];
const gateways: TestGateway[] = [];

/**
 * A modern server whose capabilities carry a member named `__proto__`, written as JSON text (a JavaScript
 * object literal would take it as the prototype).
 */
async function oddCapabilitiesServer(): Promise<FakeUpstream> {
  return startFakeUpstream(
    (_req: IncomingMessage, res: ServerResponse, body: string) => {
      const msg = JSON.parse(body) as { id?: unknown; method?: string };
      const reply = (resultText: string): void => void res.writeHead(200, { 'content-type': 'application/json' }).end(`{"jsonrpc":"2.0","id":${JSON.stringify(msg.id)},"result":${resultText}}`);
      if (msg.method === 'server/discover') {
        return reply('{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":false},"__proto__":{"gatehousePolluted":true},"constructor":{"x":true}},"resultType":"complete","ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"odd","version":"0"}}}');
      }
      if (msg.method === 'tools/list') return reply('{"tools":[],"resultType":"complete","ttlMs":0,"cacheScope":"public"}');
      res.writeHead(404, { 'content-type': 'application/json' }).end(`{"jsonrpc":"2.0","id":${JSON.stringify(msg.id ?? null)},"error":{"code":-32601,"message":"Method not found"}}`);
    },
    { handshake: false },
  );
}

before(async () => {
  legacyUp = await startPollingServer();
  modernUp = await startModernServer();
  fakes.push(await oddCapabilitiesServer(), await oddCapabilitiesServer());
});
after(async () => {
  for (const gw of gateways) await gw.close();
  for (const f of fakes) await f.close();
  await modernUp?.close();
  await legacyUp?.close();
});

describe('a method named like an inherited member', () => {
  const setups = {
    'a legacy upstream': () => [{ name: 'legacy', url: legacyUp.url, era: 'legacy' }],
    'a modern upstream': () => [{ name: 'modern', url: modernUp.url, era: 'modern' }],
    'several upstreams (the catalog)': () => [
      { name: 'legacy', url: legacyUp.url, era: 'legacy' },
      { name: 'modern', url: modernUp.url, era: 'modern' },
    ],
  };
  for (const [label, upstreams] of Object.entries(setups)) {
    test(`is refused with a structured error in both eras, to ${label}`, { timeout: 60_000 }, async () => {
      const gw = await startGateway({ upstreams: upstreams() });
      gateways.push(gw);
      let id = 0;
      for (const method of INHERITED) {
        const modern = modernCall(++id, method);
        const res = await post(gw.url, modern.body, modern.headers);
        assertRefusedCleanly(res, `modern ${method}`);
      }
      const session = await legacySession(gw.url);
      const legacyHeaders = { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
      for (const method of INHERITED) {
        const res = await post(gw.url, rpc(++id, method, { name: 'echo' }), legacyHeaders);
        assertRefusedCleanly(res, `legacy ${method}`);
      }
      // The gateway still serves the real methods.
      const list = modernRequest(++id, 'tools/list');
      assert.equal((await post(gw.url, list.body, list.headers)).status, 200);
      assert.equal(gw.logs.filter((l) => l.level === 'error').length, 0, JSON.stringify(gw.logs.filter((l) => l.level === 'error')));
    });
  }
});

test("an upstream capability named __proto__ is merged as a member, not into every object's prototype", { timeout: 60_000 }, async () => {
  const gw = await startGateway({ upstreams: fakes.map((f, i) => ({ name: `odd${i}`, url: f.url, era: 'modern' })) });
  gateways.push(gw);
  const discover = modernRequest(1, 'server/discover');
  const res = await post(gw.url, discover.body, discover.headers);
  assert.equal(res.status, 200, res.text);
  assert.equal(({} as Record<string, unknown>).gatehousePolluted, undefined, 'Object.prototype untouched');
  const capabilities = res.json().result.capabilities as Record<string, unknown>;
  assert.ok(Object.hasOwn(capabilities, '__proto__'), res.text);
  assert.deepEqual(capabilities['__proto__'], { gatehousePolluted: true }, 'the member is passed on as the upstreams said it');
  assert.deepEqual(capabilities.constructor, { x: true });
  assert.deepEqual(capabilities.tools, { listChanged: false });
});
