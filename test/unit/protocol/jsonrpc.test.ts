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

test('nesting deeper than the limit is refused by depth; a text too short to be that deep is only parsed', () => {
  const nested = (depth: number): string => `{"jsonrpc":"2.0","id":1,"method":"a","params":{"x":${'['.repeat(depth - 2)}${']'.repeat(depth - 2)}}}`;
  // The limit counts every bracket, the message's own braces included.
  const ok = classifyBody(Buffer.from(nested(8)), 8);
  assert.ok(ok.ok);
  const deep = classifyBody(Buffer.from(nested(9)), 8);
  assert.ok(!deep.ok);
  assert.equal(deep.code, ErrorCode.ParseError);
  assert.match(deep.message, /nested deeper than 8 levels/);
  // The shortest text nested 9 deep: 18 characters, all brackets.
  const shortest = classifyBody(Buffer.from(`${'['.repeat(9)}${']'.repeat(9)}`), 8);
  assert.ok(!shortest.ok);
  assert.match(shortest.message, /nested deeper than 8 levels/);
  // Nine unclosed brackets are 9 characters: not JSON at all, whatever its depth.
  const unclosed = classifyBody(Buffer.from('['.repeat(9)), 8);
  assert.ok(!unclosed.ok);
  assert.equal(unclosed.code, ErrorCode.ParseError);
  assert.match(unclosed.message, /not valid JSON/);
});

test('an object naming the same member twice is refused, wherever it is: servers disagree on which one counts', () => {
  // JSON.parse keeps the last; a server that keeps the first would run another tool, or other arguments,
  // than the ones Gatehouse checked (RFC 8259 §4; I-JSON, RFC 7493 §2.3, forbids them).
  const twice = [
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_everything","name":"read_file","arguments":{}}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fetch","arguments":{"url":"http://169.254.169.254/","url":"https://example.com/"}}}',
    '{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"list":[{"k":1,"k":2}]}}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"\\u006b":1,"k":2}}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"__proto__":1,"__proto__":2}}}',
  ];
  for (const body of twice) {
    const r = c(body);
    assert.ok(!r.ok, body);
    assert.equal(r.code, ErrorCode.InvalidRequest, body);
    assert.match(r.message, /names the same member twice/);
  }
  // The same names in different objects, colons and braces inside strings, an own __proto__ member: all fine.
  const fine = [
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"name":"b","x":{"name":"c"}}}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a:b","arguments":{"t":"{\\"k\\":1,\\"k\\":2}","u":"x:y:z"}}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"__proto__":{"polluted":true},"constructor":1}}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"list":[{"k":1},{"k":2}],"empty":{},"none":[]}}}',
  ];
  for (const body of fine) assert.ok(c(body).ok, body);
});
