// Which refusals of a request naming a legacy session say the session is unknown there
// (src/upstream/session-unknown.ts): 404 (2025-11-25/basic/transports.mdx §Session Management 3), and the 400
// "No valid session ID provided" of servers built on the v1 SDK's examples before 2026 and of the Python
// SDK's session manager before python-sdk#1808, JSON-RPC or plain text. Any other 400 is the server's answer to the call.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sessionUnknown } from '../../../src/upstream/session-unknown.js';

test('404, and the 400s that say the session is not known, are a session gone', () => {
  assert.equal(sessionUnknown({ status: 404, errorText: '{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}' }), true);
  assert.equal(sessionUnknown({ status: 404 }), true);
  // typescript-sdk examples before #389 was fixed
  assert.equal(sessionUnknown({ status: 400, errorText: '{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}' }), true);
  // python-sdk StreamableHTTPSessionManager before #1808: plain text
  assert.equal(sessionUnknown({ status: 400, errorText: 'Bad Request: No valid session ID provided' }), true);
  assert.equal(sessionUnknown({ status: 400, errorText: '{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: Unknown Mcp-Session-Id header"}}' }), true);
});

test('a 400 about anything else, or one that answers the request itself, is the server\'s verdict on the call', () => {
  assert.equal(sessionUnknown({ status: 400, errorText: '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: Invalid JSON"}}' }), false);
  assert.equal(sessionUnknown({ status: 400, errorText: '{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: Server not initialized"}}' }), false);
  assert.equal(sessionUnknown({ status: 400, errorText: '{"jsonrpc":"2.0","id":"gh-7","error":{"code":-32602,"message":"no such session in this game"}}' }), false, 'an error for the request\'s id is its answer');
  assert.equal(sessionUnknown({ status: 400, errorText: 'Bad Request' }), false);
  assert.equal(sessionUnknown({ status: 400 }), false, 'nothing read: nothing to go on');
  assert.equal(sessionUnknown({ status: 400, errorText: '["session"]' }), false);
  assert.equal(sessionUnknown({ status: 403, errorText: 'session expired' }), false, 'only 400 and 404');
  assert.equal(sessionUnknown({ status: 500, errorText: '{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"session store down"}}' }), false);
});
