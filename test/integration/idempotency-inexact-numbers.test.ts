// The same idempotency key with another request is a conflict, never a replay (README, Idempotent writes:
// "the same key, another request | idempotency_key_conflict; nothing runs"). Requests are compared by their
// arguments as Gatehouse reads them, and JSON.parse reads every number as a double: 9007199254740993 and
// 9007199254740992 (2^53 + 1 and 2^53) read alike, while the upstream gets the client's bytes and may read
// them exactly (RFC 8259 §6). Until 4 December a write for account 9007199254740993 retried under the key
// of one for account 9007199254740992 was answered that other call's stored result, marked a replay, and
// never ran. Now a number Gatehouse cannot read exactly is compared as the client wrote it.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { jsonResult, startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post } from '../helpers/http.js';

let up: FakeUpstream;
let gw: TestGateway;
/** The request bodies of the tools/call the upstream ran. */
const ran: string[] = [];
before(async () => {
  up = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown; method: string };
    if (msg.method === 'initialize') return jsonResult(res, body, { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'bigint-fake', version: '1' } });
    if (msg.method === 'tools/list') return jsonResult(res, body, { tools: [{ name: 'charge', inputSchema: { type: 'object', properties: { account: { type: 'integer' } } }, annotations: { destructiveHint: true } }] });
    if (msg.id === undefined) return void res.writeHead(202).end();
    ran.push(body);
    // The account as the client wrote it: a server that reads numbers exactly.
    jsonResult(res, body, { content: [{ type: 'text', text: `charged ${/"account":\s*(\d+)/.exec(body)?.[1]}` }] });
  });
  gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }], idempotency: { requireKeys: true } });
});
after(async () => {
  await gw.close();
  await up.close();
});

let n = 0;
/** tools/call with the arguments' JSON text as given, so the number's digits reach the gateway as written. */
async function charge(accountLiteral: string, key: string, order: 'account-first' | 'memo-first' = 'account-first') {
  const args = order === 'account-first' ? `{"account":${accountLiteral},"memo":"x"}` : `{"memo":"x","account":${accountLiteral}}`;
  const body = `{"jsonrpc":"2.0","id":${++n},"method":"tools/call","params":{"name":"charge","arguments":${args},"_meta":{"idempotencyKey":"${key}"}}}`;
  const res = await post(gw.url, body, LEGACY_HEADERS);
  return res.json().result as { content: Array<{ text: string }>; structuredContent?: { error?: { code: string } }; _meta?: Record<string, unknown> };
}

test('two accounts JSON.parse reads alike are two requests: the second under the first one\'s key is a conflict', async () => {
  const first = await charge('9007199254740992', 'bigint-key-0001');
  assert.equal(first.content[0]!.text, 'charged 9007199254740992');
  const other = await charge('9007199254740993', 'bigint-key-0001');
  assert.equal(other.structuredContent?.error?.code, 'idempotency_key_conflict', `not the other account's answer: ${JSON.stringify(other)}`);
  assert.equal(ran.length, 1, 'nothing ran for it');
});

test('the very same request is still replayed, its number written the same, whatever the key order', async () => {
  const first = await charge('9007199254740993', 'bigint-key-0002');
  assert.equal(first.content[0]!.text, 'charged 9007199254740993');
  const again = await charge('9007199254740993', 'bigint-key-0002', 'memo-first');
  assert.equal(again._meta?.['dev.gatehouse/replayed'], true, JSON.stringify(again));
  assert.equal(again.content[0]!.text, 'charged 9007199254740993');
});
