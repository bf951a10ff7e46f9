// RFC 9110 §5.3: a field that is not a list must not be repeated; the edge refuses a request that repeats
// one of the headers MCP or auth depend on (the integration side is in edge-limits.test.ts).

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { repeatedSingletonHeader } from '../../../src/edge/duplicate-headers.js';

describe('repeatedSingletonHeader', () => {
  test('finds a singleton repeated in any mix of case, and names it lower-cased', () => {
    assert.equal(repeatedSingletonHeader(['Origin', 'a', 'Accept', 'x', 'ORIGIN', 'b']), 'origin');
    assert.equal(repeatedSingletonHeader(['mcp-session-id', 'a', 'Content-Length', '1', 'Mcp-Session-Id', 'b']), 'mcp-session-id');
  });

  test('lets traceparent repeat: W3C Trace Context restarts the trace instead (test_traceparent_duplicated)', () => {
    assert.equal(repeatedSingletonHeader(['TraceParent', 'a', 'traceparent', 'b']), undefined);
  });

  test('lets list headers and names of a singleton\'s length repeat', () => {
    // accept (6) and connection (10) share a length with origin and mcp-method.
    assert.equal(repeatedSingletonHeader(['Accept', 'a', 'Accept', 'b', 'Connection', 'x', 'Connection', 'y', 'Via', '1', 'Via', '2']), undefined);
    // One of each singleton: nothing repeated.
    assert.equal(repeatedSingletonHeader(['Host', 'h', 'Authorization', 'a', 'Last-Event-Id', 'e', 'Content-Type', 't', 'Content-Length', '1']), undefined);
  });

  test('tells apart singletons of one length', () => {
    // content-length, mcp-session-id: both 14 characters; authorization, last-event-id: both 13.
    assert.equal(repeatedSingletonHeader(['Content-Length', '1', 'Mcp-Session-Id', 's']), undefined);
    assert.equal(repeatedSingletonHeader(['Authorization', 'a', 'Last-Event-ID', 'e', 'last-event-id', 'f']), 'last-event-id');
  });

  test('finds an Mcp-Param header repeated in any case (streamable-http.mdx §Value Encoding: one value each); different ones may each come once', () => {
    assert.equal(repeatedSingletonHeader(['Mcp-Param-Region', 'a', 'Accept', 'x', 'MCP-PARAM-REGION', 'b']), 'mcp-param-region');
    assert.equal(repeatedSingletonHeader(['Mcp-Param-Region', 'a', 'Mcp-Param-Tenant', 't', 'Mcp-Param-Regions', 'b']), undefined);
    // The prefix alone names no parameter, and is no Mcp-Param header.
    assert.equal(repeatedSingletonHeader(['mcp-param-', 'a', 'mcp-param-', 'b']), undefined);
  });
});
