// JSON-RPC classification: one message per POST (2026-07-28/basic/transports/streamable-http.mdx
// §Sending Messages; batches refused since 2025-06-18).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyBody, ErrorCode } from '../../../src/protocol/jsonrpc.js';

const c = (s: string) => classifyBody(Buffer.from(s));

test('requests, notifications and responses are told apart', () => {
  assert.deepEqual(c('{"jsonrpc":"2.0","id":1,"method":"tools/list"}').ok && c('{"jsonrpc":"2.0","id":1,"method":"tools/list"}'), { ok: true, kind: 'request', message: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
  const n = c('{"jsonrpc":"2.0","method":"notifications/initialized"}');
  assert.ok(n.ok && n.kind === 'notification');
  const r = c('{"jsonrpc":"2.0","id":"s1","result":{}}');
  assert.ok(r.ok && r.kind === 'response');
});

test('malformed input gets the right code', () => {
  const cases: Array<[string, number]> = [
    ['{nope', ErrorCode.ParseError],
    ['[{"jsonrpc":"2.0","id":1,"method":"a"}]', ErrorCode.InvalidRequest],
    ['"text"', ErrorCode.InvalidRequest],
    ['{"jsonrpc":"1.0","id":1,"method":"a"}', ErrorCode.InvalidRequest],
    ['{"jsonrpc":"2.0","id":1.5,"method":"a"}', ErrorCode.InvalidRequest],
    ['{"jsonrpc":"2.0","id":null,"method":"a"}', ErrorCode.InvalidRequest],
    ['{"jsonrpc":"2.0","id":1,"method":"a","params":[1]}', ErrorCode.InvalidRequest],
    ['{"jsonrpc":"2.0","id":1}', ErrorCode.InvalidRequest],
  ];
  for (const [body, code] of cases) {
    const r = c(body);
    assert.ok(!r.ok, body);
    assert.equal(r.code, code, body);
  }
});
