// Every kind of refusal rendered for the wire, for a legacy and for a modern client (DESIGN.md §2): HTTP
// status, headers and the JSON-RPC body, from the one function that does it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ERROR_META, GatewayError, refusalCode, refusalOfTool, toWire, type GatewayErrorCode, type Refusal, type ToolRefusalCode } from '../../src/errors.js';

const ctx = { id: 7, callId: 'call-1' } as const;
const ERAS = ['legacy', 'modern'] as const;

interface Row {
  refusal: Refusal;
  code: string;
  status: number;
  headers?: Record<string, string>;
  /** The JSON-RPC error expected, or undefined when the answer is a result. */
  error?: { code: number; message: string; data?: unknown };
}

const rows: Row[] = [
  {
    refusal: { kind: 'transport', code: 'header_mismatch', status: 400, rpcCode: -32020, message: 'Header mismatch: Mcp-Name' },
    code: 'header_mismatch',
    status: 400,
    error: { code: -32020, message: 'Header mismatch: Mcp-Name' },
  },
  {
    refusal: { kind: 'transport', code: 'unsupported_version', status: 400, rpcCode: -32022, message: 'Unsupported protocol version: 1999-01-01', data: { supported: ['2026-07-28'], requested: '1999-01-01' } },
    code: 'unsupported_version',
    status: 400,
    error: { code: -32022, message: 'Unsupported protocol version: 1999-01-01', data: { supported: ['2026-07-28'], requested: '1999-01-01' } },
  },
  {
    refusal: { kind: 'transport', code: 'session_unknown', status: 404, rpcCode: -32001, message: 'Session not found; initialize a new session', data: { details: { reason: 'unknown' } } },
    code: 'session_unknown',
    status: 404,
    error: { code: -32001, message: 'Session not found; initialize a new session', data: { details: { reason: 'unknown' } } },
  },
  {
    refusal: { kind: 'transport', code: 'auth_failure_limit', status: 429, rpcCode: -32600, message: 'Too many failed authentication attempts', data: { retryAfter: 30 }, headers: { 'retry-after': '30' } },
    code: 'auth_failure_limit',
    status: 429,
    headers: { 'retry-after': '30' },
    error: { code: -32600, message: 'Too many failed authentication attempts', data: { retryAfter: 30 } },
  },
  {
    refusal: { kind: 'transport', code: 'method_not_allowed', status: 405, rpcCode: -32600, message: 'Method PUT is not allowed', headers: { allow: 'GET, POST, DELETE' } },
    code: 'method_not_allowed',
    status: 405,
    headers: { allow: 'GET, POST, DELETE' },
    error: { code: -32600, message: 'Method PUT is not allowed' },
  },
  {
    refusal: { kind: 'auth', code: 'expired', status: 401, message: 'The token has expired', headers: { 'www-authenticate': 'Bearer realm="gatehouse", error="invalid_token"' }, rejectedCredential: true },
    code: 'expired',
    status: 401,
    headers: { 'www-authenticate': 'Bearer realm="gatehouse", error="invalid_token"' },
    error: { code: -32600, message: 'The token has expired', data: { reason: 'expired' } },
  },
  {
    refusal: { kind: 'auth', code: 'auth_unavailable', status: 503, message: 'Authentication is temporarily unavailable', headers: { 'retry-after': '5' }, rejectedCredential: false },
    code: 'auth_unavailable',
    status: 503,
    headers: { 'retry-after': '5' },
    error: { code: -32600, message: 'Authentication is temporarily unavailable', data: { reason: 'auth_unavailable' } },
  },
  {
    refusal: { kind: 'protocol', code: 'unknown_tool', rpcCode: -32602, message: 'Unknown tool: nope' },
    code: 'unknown_tool',
    status: 200,
    error: { code: -32602, message: 'Unknown tool: nope' },
  },
];

const TOOL_CODES: ToolRefusalCode[] = [
  'invalid_arguments', 'invalid_output', 'egress_blocked', 'rate_limited', 'budget_exhausted', 'upstream_unavailable', 'approval_pending',
  'approval_rejected', 'approval_expired', 'idempotency_key_required', 'idempotency_key_conflict', 'outcome_unknown', 'tool_changed',
];

const FAILURES: Array<[GatewayErrorCode, number]> = [
  ['GW_ERR_UPSTREAM_UNREACHABLE', 502],
  ['GW_ERR_UPSTREAM_TIMEOUT', 504],
  ['GW_ERR_UPSTREAM_BAD_RESPONSE', 502],
  ['GW_ERR_UPSTREAM_EXITED', 503],
  ['GW_ERR_UPSTREAM_OVERLOADED', 503],
  ['GW_ERR_SHUTTING_DOWN', 503],
  ['GW_ERR_STATE_UNAVAILABLE', 503],
  ['GW_ERR_SESSION_LIMIT', 503],
];

/** Retry-After of a 503 failure: a second, unless a session must first end (GW_ERR_SESSION_LIMIT). */
const RETRY_AFTER: Partial<Record<GatewayErrorCode, string>> = { GW_ERR_SESSION_LIMIT: '5' };

for (const era of ERAS) {
  for (const row of rows) {
    test(`${era}: ${row.refusal.kind} refusal ${row.code} → HTTP ${row.status}, JSON-RPC ${row.error?.code}`, () => {
      const wire = toWire(row.refusal, { ...ctx, era });
      assert.equal(refusalCode(row.refusal), row.code);
      assert.equal(wire.status, row.status);
      assert.deepEqual(wire.headers, row.headers ?? {});
      assert.deepEqual(wire.body, { jsonrpc: '2.0', id: 7, error: row.error });
    });
  }

  for (const code of TOOL_CODES) {
    test(`${era}: tool refusal ${code} → HTTP 200, a tool result with isError and structuredContent.error.code`, () => {
      const refusal: Refusal = { kind: 'tool', code, message: `refused: ${code}`, details: { errors: [] }, meta: { 'dev.gatehouse/run_id': 'r-1' } };
      const wire = toWire(refusal, { ...ctx, era });
      assert.equal(wire.status, 200);
      assert.equal(refusalCode(refusal), code);
      const result = wire.body.result!;
      assert.equal(wire.body.error, undefined);
      assert.equal(result.isError, true);
      assert.deepEqual(result.content, [{ type: 'text', text: `refused: ${code}` }]);
      assert.deepEqual(result.structuredContent, { error: { code, message: `refused: ${code}`, errors: [] } });
      assert.deepEqual((result._meta as Record<string, unknown>)['dev.gatehouse/run_id'], 'r-1');
      // 2026-07-28 results say they are complete; legacy clients never see modern-only fields.
      assert.equal(result.resultType, era === 'modern' ? 'complete' : undefined);
    });
  }

  for (const code of TOOL_CODES) {
    // server/tools.mdx §Output Schema: "Servers MUST provide structured results that conform to this schema";
    // `{ error }` conforms to no tool's schema, and the v1 SDK's client checks it even with isError set.
    test(`${era}: tool refusal ${code} of a tool with an outputSchema → no structuredContent, the error in _meta["${ERROR_META}"]`, () => {
      const refusal = refusalOfTool({ kind: 'tool', code, message: `refused: ${code}`, details: { errors: [] }, meta: { 'dev.gatehouse/run_id': 'r-1' } }, { route: { outputSchema: { type: 'object' } } });
      const result = toWire(refusal, { ...ctx, era }).body.result!;
      assert.equal(result.isError, true);
      assert.equal(Object.hasOwn(result, 'structuredContent'), false);
      assert.deepEqual(result.content, [{ type: 'text', text: `refused: ${code}` }]);
      assert.deepEqual(result._meta, { 'dev.gatehouse/run_id': 'r-1', [ERROR_META]: { code, message: `refused: ${code}`, errors: [] } });
      assert.equal(result.resultType, era === 'modern' ? 'complete' : undefined);
    });
  }

  for (const [code, status] of FAILURES) {
    test(`${era}: failure ${code} → HTTP ${status}, -32603 with the code, retryable and the call id`, () => {
      const error = new GatewayError(code, `it failed: ${code}`, 'crm');
      const wire = toWire({ kind: 'failure', error }, { ...ctx, era });
      assert.equal(wire.status, status);
      assert.deepEqual(wire.headers, status === 503 ? { 'retry-after': RETRY_AFTER[code] ?? '1' } : {});
      assert.deepEqual(wire.body, { jsonrpc: '2.0', id: 7, error: { code: -32603, message: `it failed: ${code}`, data: { code, retryable: error.retryable, upstream: 'crm', callId: 'call-1' } } });
      assert.equal(refusalCode({ kind: 'failure', error }), code.slice('GW_ERR_'.length).toLowerCase());
    });
  }
}

test('a refusal of a notification or of an unread body carries a null id', () => {
  const wire = toWire({ kind: 'transport', code: 'parse_error', status: 400, rpcCode: -32700, message: 'Parse error' }, { era: 'legacy', id: null, callId: 'c' });
  assert.deepEqual(wire.body, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
});

test('refusalOfTool marks only a tool refusal of a tool known to declare an outputSchema, or of a task call', () => {
  const tool: Refusal = { kind: 'tool', code: 'rate_limited', message: 'later' };
  const protocol: Refusal = { kind: 'protocol', code: 'unknown_tool', rpcCode: -32602, message: 'no such tool' };
  const plain = { params: { name: 't', arguments: {} } };
  const asTask = { params: { name: 't', arguments: {}, task: { ttl: 1000 } } };
  assert.equal(refusalOfTool(tool, {}), tool, 'no route: as it was');
  assert.equal(refusalOfTool(tool, { route: {}, message: plain }), tool, 'no outputSchema, no task: as it was');
  assert.equal(refusalOfTool(protocol, { route: { outputSchema: {} }, message: asTask }), protocol, 'not a tool result: as it was');
  const marked = refusalOfTool(tool, { route: { outputSchema: {} }, message: plain });
  assert.deepEqual(marked, { ...tool, outputSchema: true });
  assert.equal(refusalOfTool(marked, { route: { outputSchema: {} } }), marked, 'marked once');
  assert.deepEqual(refusalOfTool(tool, { route: {}, message: asTask }), { ...tool, task: true });
  assert.equal((tool as { outputSchema?: unknown }).outputSchema, undefined, 'the refusal given is not changed');
});

for (const era of ERAS) {
  // tasks.mdx §Behavior Requirements: a receiver that accepts a task-augmented request MUST answer with a
  // CreateTaskResult; Gatehouse, refusing it, answers with a JSON-RPC error (§Error Handling: -32603).
  test(`${era}: a tool refusal of a task-augmented call → HTTP 200, -32603 whose data carries the code, details and _meta entries`, () => {
    const refusal = refusalOfTool({ kind: 'tool', code: 'rate_limited', message: 'later', details: { rule: 'once' }, meta: { 'dev.gatehouse/retry_after': 3 } }, { route: { outputSchema: {} }, message: { params: { task: {} } } });
    const wire = toWire(refusal, { ...ctx, era });
    assert.equal(wire.status, 200);
    assert.deepEqual(wire.body, { jsonrpc: '2.0', id: 7, error: { code: -32603, message: 'later', data: { code: 'rate_limited', message: 'later', rule: 'once', 'dev.gatehouse/retry_after': 3 } } });
  });
}
