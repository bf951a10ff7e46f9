// One test per front-door rule: status code, JSON-RPC code and body shape, including hostile inputs.
// Nothing refused here may reach the upstream, and every refusal is counted.
// Spec: 2026-07-28/basic/transports/streamable-http.mdx (SH) and 2025-11-25/basic/transports.mdx (LT).

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { jsonResult, sleep, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, modernRequest, post, rpc } from '../helpers/http.js';

// The front door runs before any upstream is chosen; pinning each gateway's upstream era keeps what is
// forwarded a plain pass-through, so these tests see exactly what got through.
const up = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { ok: true }), { handshake: 'modern' });
const listen = { maxBodyBytes: 64 * 1024, requestTimeoutMs: 500 };
const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }], listen });
const gwModern = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], listen });
after(async () => {
  await gw.close();
  await gwModern.close();
  await up.close();
});

/** Sends, asserts the refusal's status and JSON-RPC code, and that the upstream saw nothing. */
async function expectRefusal(target: { url: string }, body: string, headers: Record<string, string>, status: number, code: number): Promise<Record<string, any>> {
  const before = up.requests.length;
  const res = await post(target.url, body, headers);
  assert.equal(res.status, status, res.text);
  const json = res.json();
  assert.equal(json.jsonrpc, '2.0');
  assert.equal(json.error.code, code, res.text);
  assert.equal(typeof json.error.message, 'string');
  assert.equal(up.requests.length, before, 'a refused request never reaches the upstream');
  return json;
}

describe('modern requests (2026-07-28)', () => {
  test('SH §Protocol Version Header: a modern body without the MCP-Protocol-Version header → 400 -32020', async () => {
    const { body, headers } = modernRequest(1, 'tools/list');
    delete headers['mcp-protocol-version'];
    await expectRefusal(gwModern, body, headers, 400, -32020);
  });

  test('SH §Protocol Version Header: header version differing from _meta version → 400 -32020', async () => {
    const { body, headers } = modernRequest(1, 'tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2025-11-25' } });
    const json = await expectRefusal(gwModern, body, headers, 400, -32020);
    assert.equal(json.id, 1);
  });

  test('SH §Protocol Version Header: a legacy header over a modern body → 400 -32020, not served as legacy', async () => {
    const { body, headers } = modernRequest(1, 'tools/list');
    const json = await expectRefusal(gwModern, body, { ...headers, 'mcp-protocol-version': '2025-11-25' }, 400, -32020);
    assert.equal(json.id, 1);
  });

  test('SH §Server Validation: Mcp-Method missing or different from the body → 400 -32020', async () => {
    const missing = modernRequest(2, 'tools/list');
    delete missing.headers['mcp-method'];
    await expectRefusal(gwModern, missing.body, missing.headers, 400, -32020);
    const other = modernRequest(3, 'tools/list');
    await expectRefusal(gwModern, other.body, { ...other.headers, 'mcp-method': 'prompts/list' }, 400, -32020);
  });

  test('SH §Server Validation: a header naming one tool while the body calls another (smuggling) → 400 -32020', async () => {
    const { body, headers } = modernRequest(4, 'tools/call', { name: 'delete_everything', arguments: {} });
    const json = await expectRefusal(gwModern, body, { ...headers, 'mcp-name': 'read_only_lookup' }, 400, -32020);
    assert.match(json.error.message, /Mcp-Name header value 'read_only_lookup' does not match body value 'delete_everything'/);
    const noName = modernRequest(5, 'resources/read', { uri: 'file:///etc/passwd' });
    delete noName.headers['mcp-name'];
    await expectRefusal(gwModern, noName.body, noName.headers, 400, -32020);
  });

  test('SH §Value Encoding: a base64-sentinel Mcp-Name is decoded before comparing; a malformed one → -32020', async () => {
    const { body, headers } = modernRequest(6, 'tools/call', { name: 'météo', arguments: {} });
    const ok = await post(gwModern.url, body, { ...headers, 'mcp-name': '=?base64?bcOpdMOpbw==?=' });
    assert.equal(ok.status, 200, ok.text);
    await expectRefusal(gwModern, body, { ...headers, 'mcp-name': '=?base64?not base64!?=' }, 400, -32020);
  });

  test('2026-07-28/basic/index.mdx §_meta: protocolVersion or clientCapabilities missing from _meta → 400 -32602', async () => {
    const headers = { ...LEGACY_HEADERS, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' };
    await expectRefusal(gwModern, rpc(7, 'tools/list', {}), headers, 400, -32602);
    await expectRefusal(gwModern, rpc(8, 'tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } }), headers, 400, -32602);
  });

  test('VER §Protocol Version Negotiation: an unsupported version → 400 -32022 with data.supported and data.requested', async () => {
    const { body, headers } = modernRequest(9, 'tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } });
    const json = await expectRefusal(gwModern, body, { ...headers, 'mcp-protocol-version': '2099-01-01' }, 400, -32022);
    assert.deepEqual(json.error.data.supported, ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']);
    assert.equal(json.error.data.requested, '2099-01-01');
  });

  test('SH §Protocol Version Header: an unknown method → 404 -32601', async () => {
    const { body, headers } = modernRequest(10, 'tools/explode');
    await expectRefusal(gwModern, body, headers, 404, -32601);
  });

  test('SH §Sending Messages 4: a JSON-RPC response from a modern client → 400 -32600', async () => {
    await expectRefusal(gwModern, '{"jsonrpc":"2.0","id":1,"result":{}}', { ...LEGACY_HEADERS, 'mcp-protocol-version': '2026-07-28' }, 400, -32600);
  });

  test('SH §Case Sensitivity: header names match in any case; mirrored values are compared case-sensitively', async () => {
    const { body, headers } = modernRequest(12, 'tools/call', { name: 'get_weather', arguments: {} });
    const shouted = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
    const ok = await post(gwModern.url, body, shouted);
    assert.equal(ok.status, 200, ok.text);
    assert.equal(up.requests.at(-1)!.body, body);
    await expectRefusal(gwModern, body, { ...headers, 'mcp-method': 'Tools/Call' }, 400, -32020);
    await expectRefusal(gwModern, body, { ...headers, 'mcp-name': 'Get_Weather' }, 400, -32020);
  });

  test('a well-formed modern request passes every check and is forwarded', async () => {
    const { body, headers } = modernRequest(11, 'tools/call', { name: 'echo', arguments: { text: 'hi' } });
    const res = await post(gwModern.url, body, headers);
    assert.equal(res.status, 200);
    assert.equal(up.requests.at(-1)!.body, body);
  });
});

describe('legacy requests', () => {
  test('LT §Protocol Version Header: no header → treated as 2025-03-26 and forwarded', async () => {
    const res = await post(gw.url, rpc(1, 'tools/list'));
    assert.equal(res.status, 200);
  });

  test('LT §Protocol Version Header: an unsupported legacy-looking version → 400 -32022', async () => {
    await expectRefusal(gw, rpc(2, 'tools/list'), { ...LEGACY_HEADERS, 'mcp-protocol-version': '2024-01-01' }, 400, -32022);
  });

  test('LT §Listening for Messages: a GET without Accept: text/event-stream → 406', async () => {
    const res = await request(gw.url, { method: 'GET', headers: { accept: 'application/json', 'mcp-session-id': 's' } });
    assert.equal(res.statusCode, 406);
    assert.equal(((await res.body.json()) as { error: { code: number } }).error.code, -32600);
  });
});

describe('both eras', () => {
  test('a JSON-RPC batch from a client of 2025-06-18 or later → 400 -32600 (batches were removed in 2025-06-18; 2025-03-26 ones are unbatched, batch.test.ts)', async () => {
    await expectRefusal(gw, `[${rpc(1, 'tools/list')},${rpc(2, 'tools/list')}]`, { ...LEGACY_HEADERS, 'mcp-protocol-version': '2025-11-25' }, 400, -32600);
  });

  test('malformed JSON → 400 -32700; invalid UTF-8 → 400 -32700', async () => {
    await expectRefusal(gw, '{"jsonrpc":"2.0",', LEGACY_HEADERS, 400, -32700);
    const before = up.requests.length;
    const bad = Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}}')]);
    const res = await request(gw.url, { method: 'POST', headers: LEGACY_HEADERS, body: bad });
    assert.equal(res.statusCode, 400);
    assert.match(((await res.body.json()) as { error: { message: string } }).error.message, /not valid UTF-8/);
    assert.equal(up.requests.length, before);
  });

  test('an object naming a member twice → 400 -32600, in either era: the upstream might run the other one (RFC 7493 §2.3)', async () => {
    const legacy = await expectRefusal(gw, '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"drop_table","name":"select","arguments":{}}}', LEGACY_HEADERS, 400, -32600);
    assert.match(legacy.error.message, /names the same member twice/);
    // The modern headers name the last, as JSON.parse reads it; a server reading the first would run drop_table.
    const modern = modernRequest(2, 'tools/call', { name: 'select', arguments: {} });
    const twice = modern.body.replace('"name":"select"', '"name":"drop_table","name":"select"');
    assert.notEqual(twice, modern.body);
    await expectRefusal(gwModern, twice, modern.headers, 400, -32600);
  });

  test('deeply nested JSON → 400 -32700 without a crash', async () => {
    const deep = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}}`;
    const json = await expectRefusal(gw, deep, LEGACY_HEADERS, 400, -32700);
    assert.match(json.error.message, /nested deeper than 64/);
  });

  test('LT §Sending Messages 1: Content-Type other than application/json → 415', async () => {
    await expectRefusal(gw, rpc(1, 'tools/list'), { ...LEGACY_HEADERS, 'content-type': 'text/plain' }, 415, -32600);
    const withCharset = await post(gw.url, rpc(1, 'tools/list'), { ...LEGACY_HEADERS, 'content-type': 'application/json; charset=utf-8' });
    assert.equal(withCharset.status, 200);
  });

  test('LT §Sending Messages 2: Accept lacking text/event-stream → 406; a wildcard is enough', async () => {
    await expectRefusal(gw, rpc(1, 'tools/list'), { ...LEGACY_HEADERS, accept: 'application/json' }, 406, -32600);
    const wildcard = await post(gw.url, rpc(1, 'tools/list'), { ...LEGACY_HEADERS, accept: '*/*' });
    assert.equal(wildcard.status, 200);
  });

  test('a chunked body over maxBodyBytes → 413 as soon as it crosses the limit, not after reading it all', async () => {
    const before = up.requests.length;
    let sent = 0;
    async function* body() {
      for (let i = 0; i < 1024; i++) {
        sent += 16 * 1024;
        yield Buffer.alloc(16 * 1024, 0x20);
      }
    }
    const res = await request(gw.url, { method: 'POST', headers: LEGACY_HEADERS, body: Readable.from(body()) }).catch((err: Error) => err);
    if (!(res instanceof Error)) {
      assert.equal(res.statusCode, 413);
      await res.body.dump();
    }
    assert.ok(sent < 16 * 1024 * 1024, `the gateway stopped reading early (${sent} bytes offered)`);
    assert.equal(up.requests.length, before);
  });

  test('a body trickled slower than listen.requestTimeoutMs → 408 and the connection closed', async () => {
    const { port } = new URL(gw.url);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    let answer = '';
    socket.on('data', (d) => (answer += String(d)));
    const closed = new Promise((r) => socket.once('close', r));
    socket.write(`POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: 100\r\n\r\n{"json`);
    await Promise.race([closed, sleep(5000)]);
    socket.destroy();
    assert.match(answer, /^HTTP\/1\.1 408/);
    assert.match(answer, /"code":-32600/);
  });

  test('Host and Origin are checked before anything else → 403', async () => {
    await expectRefusal(gw, 'not even json', { ...LEGACY_HEADERS, origin: 'https://attacker.example' }, 403, -32600);
  });

  test('every refusal is counted by reason, and the process is still serving', async () => {
    const counts: Record<string, number> = {};
    for (const g of [gw, gwModern]) for (const [reason, n] of g.gateway.edge.refusals) counts[reason] = (counts[reason] ?? 0) + n;
    for (const reason of ['header_missing', 'header_mismatch', 'meta_missing', 'unsupported_version', 'method_not_found', 'batch', 'parse_error', 'invalid_utf8', 'content_type', 'accept', 'host_origin', 'body_timeout']) {
      assert.ok((counts[reason] ?? 0) >= 1, `counted ${reason}: ${JSON.stringify(counts)}`);
    }
    assert.ok(gwModern.logs.some((l) => l.msg === 'request refused' && l.reason === 'header_mismatch'));
    const still = await post(gw.url, rpc(99, 'tools/list'));
    assert.equal(still.status, 200);
  });
});
