// x-mcp-header annotations (2026-07-28/server/tools.mdx §x-mcp-header) and Mcp-Param-* checks
// (basic/transports/streamable-http.mdx §Server Behavior for Custom Headers, §Value Encoding).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkParamHeaders, paramHeadersFor, readAnnotations } from '../../../src/protocol/param-headers.js';

const schema = {
  type: 'object',
  properties: {
    region: { type: 'string', 'x-mcp-header': 'Region' },
    opts: { type: 'object', properties: { limit: { type: 'integer', 'x-mcp-header': 'Limit' }, dry: { type: 'boolean', 'x-mcp-header': 'Dry-Run' } } },
    query: { type: 'string' },
  },
};

test('valid annotations are read with their property paths, including nested properties', () => {
  const r = readAnnotations(schema);
  assert.ok(r.ok);
  assert.deepEqual(r.headers, [
    { header: 'mcp-param-region', path: ['region'], type: 'string' },
    { header: 'mcp-param-limit', path: ['opts', 'limit'], type: 'integer' },
    { header: 'mcp-param-dry-run', path: ['opts', 'dry'], type: 'boolean' },
  ]);
});

test('invalid annotations make the tool invalid: bad token, number type, duplicates, unreachable places', () => {
  const cases: Array<[unknown, RegExp]> = [
    [{ type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'Has Space' } } }, /not an HTTP token/],
    [{ type: 'object', properties: { a: { type: 'number', 'x-mcp-header': 'A' } } }, /only string, integer and boolean/],
    [{ type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'X' }, b: { type: 'string', 'x-mcp-header': 'x' } } }, /used twice/],
    [{ type: 'object', properties: { a: { type: 'array', items: { type: 'string', 'x-mcp-header': 'A' } } } }, /not reachable/],
    [{ type: 'object', properties: { a: { oneOf: [{ type: 'string', 'x-mcp-header': 'A' }] } } }, /not reachable/],
    [{ type: 'object', $defs: { d: { type: 'string', 'x-mcp-header': 'A' } } }, /not reachable/],
  ];
  for (const [s, reason] of cases) {
    const r = readAnnotations(s);
    assert.ok(!r.ok, JSON.stringify(s));
    assert.match(r.reason, reason);
  }
});

test('header checks: required when the value is present, equal after decoding, integers compared numerically', () => {
  const r = readAnnotations(schema);
  assert.ok(r.ok);
  const args = { region: 'eu-west', opts: { limit: 42, dry: false }, query: 'q' };
  const good = { 'mcp-param-region': 'eu-west', 'mcp-param-limit': '42.0', 'mcp-param-dry-run': 'false' };
  assert.equal(checkParamHeaders(r.headers, args, good), undefined);
  assert.match(checkParamHeaders(r.headers, args, { ...good, 'mcp-param-region': undefined })!, /Mcp-Param-Region header is required/);
  assert.match(checkParamHeaders(r.headers, args, { ...good, 'mcp-param-region': 'us-east' })!, /does not match body value 'eu-west'/);
  assert.match(checkParamHeaders(r.headers, args, { ...good, 'mcp-param-limit': '43' })!, /Mcp-Param-Limit/);
  assert.match(checkParamHeaders(r.headers, args, { ...good, 'mcp-param-dry-run': 'False' })!, /Mcp-Param-Dry-Run/);
  assert.equal(checkParamHeaders(r.headers, { region: 'Zürich' }, { 'mcp-param-region': '=?base64?WsO8cmljaA==?=' }), undefined);
  // Value absent: the header must not be expected, and one sent anyway does not match the body.
  assert.equal(checkParamHeaders(r.headers, { query: 'q' }, {}), undefined);
  assert.match(checkParamHeaders(r.headers, { query: 'q' }, { 'mcp-param-region': 'eu' })!, /argument it mirrors is absent/);
});

test('headers for a request Gatehouse sends itself are encoded per the value rules', () => {
  const r = readAnnotations(schema);
  assert.ok(r.ok);
  assert.deepEqual(paramHeadersFor(r.headers, { region: ' padded ', opts: { limit: 7, dry: true } }), {
    'mcp-param-region': '=?base64?IHBhZGRlZCA=?=',
    'mcp-param-limit': '7',
    'mcp-param-dry-run': 'true',
  });
});
