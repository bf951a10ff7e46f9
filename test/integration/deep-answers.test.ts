// An upstream's answer nested thousands of levels deep (JSON allows it; a client's own messages are held to
// listen.maxJsonDepth, an upstream's are not) must not take the gateway down, whichever way the answer
// goes: relayed as bytes, or read and written again (the catalog, the bridges). A tool whose outputSchema is
// recursive walked such an answer until the stack overflowed.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { LEGACY_HEADERS, legacySession, modernRequest, post } from '../helpers/http.js';
import { SseParser } from '../../src/protocol/sse.js';

const DEPTH = 20_000;
/** `{"child":{"child":…{}…}}`, written as text: JSON.stringify itself would overflow on such an object. */
const deepText = '{"child":'.repeat(DEPTH) + '{}' + '}'.repeat(DEPTH);
const RECURSIVE = { type: 'object', $defs: { node: { type: 'object', properties: { child: { $ref: '#/$defs/node' } } } }, $ref: '#/$defs/node' };
const TOOL = { name: 'deep', inputSchema: { type: 'object' }, outputSchema: RECURSIVE };

const ups: FakeUpstream[] = [];
const gateways: TestGateway[] = [];

async function modernUpstream(): Promise<FakeUpstream> {
  const up = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown; method?: string };
    if (msg.id === undefined) return void res.writeHead(202).end();
    const id = JSON.stringify(msg.id);
    const result = msg.method === 'tools/list' ? JSON.stringify({ tools: [TOOL], resultType: 'complete' }) : `{"content":[{"type":"text","text":"deep"}],"structuredContent":${deepText},"resultType":"complete"}`;
    res.writeHead(200, { 'content-type': 'application/json' }).end(`{"jsonrpc":"2.0","id":${id},"result":${result}}`);
  }, { handshake: 'modern' });
  ups.push(up);
  return up;
}

before(async () => {
  await modernUpstream();
  await modernUpstream();
});
after(async () => {
  for (const gw of gateways) await gw.close();
  for (const up of ups) await up.close();
});

describe('an upstream answer nested 20,000 levels deep, its tool declaring a recursive outputSchema', () => {
  for (const mode of ['enforce', 'warn'] as const) {
    for (const via of ['the pass-through', 'the catalog'] as const) {
      test(`outputValidation ${mode}, through ${via}: a structured refusal or failure, and the gateway goes on`, { timeout: 60_000 }, async () => {
        const upstreams = via === 'the catalog' ? ups.map((u, i) => ({ name: `u${i}`, url: u.url, era: 'modern' })) : [{ name: 'u0', url: ups[0]!.url, era: 'modern' }];
        const gw = await startGateway({ upstreams, tools: { outputValidation: mode } });
        gateways.push(gw);
        const list = modernRequest(1, 'tools/list');
        const listed = (await post(gw.url, list.body, list.headers)).json().result.tools as Array<{ name: string }>;
        const name = listed.find((t) => t.name.endsWith('deep'))!.name;
        const call = modernRequest(2, 'tools/call', { name, arguments: {} });
        const res = await post(gw.url, call.body, call.headers);
        if (via === 'the catalog') {
          // The catalog holds the answer as an object, and JSON.stringify overflows on it: it cannot be
          // written again, which makes it the upstream's failure before any stage (the output check, the
          // audit) looks at it (deep-answers-audited.test.ts).
          assert.equal(res.status, 502, res.text.slice(0, 300));
          assert.equal(res.json().error.data.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE');
          assert.equal(res.json().id, 2);
        } else if (mode === 'enforce') {
          assert.equal(res.status, 200, res.text.slice(0, 300));
          const result = res.json().result;
          assert.equal(result.isError, true, res.text.slice(0, 300));
          // The tool declares an outputSchema: the refusal is in _meta, not in structuredContent (tools.mdx §Output Schema).
          assert.equal(result.structuredContent, undefined);
          assert.equal(result._meta['dev.gatehouse/error'].code, 'invalid_output');
          assert.match(JSON.stringify(result._meta['dev.gatehouse/error']), /nested too deeply/);
        } else {
          // Relayed, it goes on as the upstream's bytes, the run id inserted into them, whatever their size.
          assert.equal(res.status, 200, res.text.slice(0, 300));
          assert.ok(res.text.endsWith(`${deepText},"resultType":"complete"}}`), res.text.slice(-300));
          assert.match(res.text, /^\{"jsonrpc":"2\.0","id":2,"result":\{"_meta":\{"dev\.gatehouse\/run_id":"[^"]+"\},/);
          assert.ok(gw.logs.some((l) => l.msg === 'tool output does not match its outputSchema'));
        }
        assert.equal(gw.logs.filter((l) => l.level === 'error').length, 0, JSON.stringify(gw.logs.filter((l) => l.level === 'error')).slice(0, 500));
        // Still serving.
        assert.equal((await post(gw.url, list.body, list.headers)).status, 200);
      });
    }
  }
});

// The answers of a 2025-03-26 batch and of a 2024-11-05 SSE session are written as events of a stream shared
// by several calls (edge/sse-outcome.ts), which wrote each message again without the depth check: an
// "Internal gateway error" and an error log (found by a 60,000-case `npm run fuzz`, seed 983100777).
describe('the same answer in a 2025-03-26 batch and on a 2024-11-05 SSE session (outputValidation warn)', () => {
  for (const via of ['the pass-through', 'the catalog'] as const) {
    test(`a batch through ${via}: the call's event is GW_ERR_UPSTREAM_BAD_RESPONSE for its id, and the gateway goes on`, { timeout: 60_000 }, async () => {
      const upstreams = via === 'the catalog' ? ups.map((u, i) => ({ name: `u${i}`, url: u.url, era: 'modern' })) : [{ name: 'u0', url: ups[0]!.url, era: 'modern' }];
      const gw = await startGateway({ upstreams, tools: { outputValidation: 'warn' } });
      gateways.push(gw);
      const session = await legacySession(gw.url, {}, '2025-03-26');
      const headers = { ...LEGACY_HEADERS, 'mcp-session-id': session };
      const listed = (await post(gw.url, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), headers)).json().result.tools as Array<{ name: string }>;
      const name = listed.find((t) => t.name.endsWith('deep'))!.name;
      const batch = JSON.stringify([{ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name, arguments: {} } }, { jsonrpc: '2.0', id: 8, method: 'tools/list' }]);
      const res = await post(gw.url, batch, headers);
      assert.equal(res.status, 200, res.text.slice(0, 300));
      const messages = new SseParser().push(Buffer.from(res.text)).map((ev) => JSON.parse(ev.data!) as Record<string, any>);
      const call = messages.find((m) => m.id === 7);
      assert.equal(call?.error?.data?.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE', res.text.slice(0, 500));
      assert.ok(messages.find((m) => m.id === 8)?.result?.tools, 'the other request of the batch is answered');
      assert.equal(gw.logs.filter((l) => l.level === 'error').length, 0, JSON.stringify(gw.logs.filter((l) => l.level === 'error')).slice(0, 500));
    });
  }

  test('a 2024-11-05 client (the v1 SDK over HTTP+SSE): the call fails with the upstream\'s failure, and the session goes on', { timeout: 60_000 }, async () => {
    const gw = await startGateway({ upstreams: [{ name: 'u0', url: ups[0]!.url, era: 'modern' }], tools: { outputValidation: 'warn' }, listen: { ssePath: '/sse' } });
    gateways.push(gw);
    const client = new Client({ name: 'old-sse-client', version: '1.0.0' });
    await client.connect(new SSEClientTransport(new URL('/sse', gw.origin)));
    try {
      await assert.rejects(client.callTool({ name: 'deep', arguments: {} }), (err: Error & { code?: number }) => err.code === -32603 && /nested too deeply/.test(err.message));
      assert.ok((await client.listTools()).tools.some((t) => t.name === 'deep'));
    } finally {
      await client.close();
    }
    assert.equal(gw.logs.filter((l) => l.level === 'error').length, 0, JSON.stringify(gw.logs.filter((l) => l.level === 'error')).slice(0, 500));
  });
});
