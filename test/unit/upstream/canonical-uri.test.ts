// canonicalUri (src/upstream/credentials.ts): the resource indicator Gatehouse sends for an upstream when
// none is configured (2026-07-28 authorization §Canonical Server URI; RFC 8707 §2).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canonicalUri } from '../../../src/upstream/credentials.js';

test('lower-case scheme and host, no fragment, no trailing slash on a bare origin; paths, ports and queries kept', () => {
  assert.equal(canonicalUri('HTTPS://MCP.Example.com/mcp'), 'https://mcp.example.com/mcp');
  assert.equal(canonicalUri('https://mcp.example.com'), 'https://mcp.example.com');
  assert.equal(canonicalUri('https://mcp.example.com/'), 'https://mcp.example.com');
  assert.equal(canonicalUri('https://mcp.example.com:8443/server/mcp#frag'), 'https://mcp.example.com:8443/server/mcp');
  assert.equal(canonicalUri('http://127.0.0.1:3001/mcp/'), 'http://127.0.0.1:3001/mcp/');
  assert.equal(canonicalUri('https://mcp.example.com/?tenant=a'), 'https://mcp.example.com/?tenant=a');
});
