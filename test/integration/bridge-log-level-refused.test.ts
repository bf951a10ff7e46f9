// A modern client's per-request logLevel becomes logging/setLevel on the pooled legacy session (GATEWAY-
// REQUIREMENTS §16.1: `_meta` logLevel; 2026-07-28/server/utilities/logging.mdx §Per-request log level), sent
// only when the session's level differs. The level was recorded before the upstream answered: a setLevel the
// server refused (an error, 2025-11-25/server/utilities/logging.mdx §Error Handling) left the session recorded
// at a level it never took, and every later request naming that level skipped the setLevel, for the session's
// life. It is now recorded only once the upstream accepted it, so the next request asks again.
// Upstream: a real v1 SDK server whose logging/setLevel refuses the first time it is asked.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { McpError, SetLevelRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startV1HttpServer } from '../fixtures/upstreams/v1-http-server.js';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

let setLevels = 0;
const up = await startV1HttpServer(
  (server) => {
    server.registerTool('hello', { description: 'Greets' }, async () => ({ content: [{ type: 'text', text: 'hello' }] }));
    server.server.setRequestHandler(SetLevelRequestSchema, async () => {
      if (++setLevels === 1) throw new McpError(-32603, 'the log sink is not ready yet');
      return {};
    });
  },
  { logging: {} },
);
const gw = await startGateway({ upstreams: [{ name: 'legacy', url: up.url, era: 'legacy' }] });
after(async () => {
  await gw.close();
  await up.close();
});

async function hello(id: number, logLevel: string) {
  const req = modernRequest(id, 'tools/call', { name: 'hello', arguments: {}, _meta: { 'io.modelcontextprotocol/logLevel': logLevel } });
  const res = await post(gw.url, req.body, req.headers);
  assert.equal(res.status, 200, res.text);
  assert.match(res.text, /hello/);
}

test('a logging/setLevel the legacy server refused is asked again by the next request at that level; one it took is not', async () => {
  await hello(1, 'debug');
  assert.equal(setLevels, 1, 'asked, and refused');
  await hello(2, 'debug');
  assert.equal(setLevels, 2, 'the refused level is asked again, not taken as set');
  await hello(3, 'debug');
  assert.equal(setLevels, 2, 'the level the server took is not asked again');
});

test('requests at once at a new level share one logging/setLevel', async () => {
  const before = setLevels;
  await Promise.all([10, 11, 12, 13].map((id) => hello(id, 'warning')));
  assert.equal(setLevels, before + 1, 'one setLevel for the four');
  await hello(14, 'warning');
  assert.equal(setLevels, before + 1);
});
