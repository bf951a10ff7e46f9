// A resource the access rules hide from a caller must read like one that does not exist (server/resources.mdx
// §Error Handling: a missing resource is -32602 in 2026-07-28; README "Access rules"), or a caller learns what
// the rules hide by asking. Until 5 December that held only where no upstream was asked: with
// `uriPrefixes` (needed to read a template's resources through the catalog) a visible URI that did not exist
// went to its upstream and came back in the upstream's words ("MCP error -32602: Resource demo://… not
// found" from server-everything, or a 2025-11-25 server's -32002 "Resource not found" with data), while a
// hidden one got Gatehouse's "Resource not found: demo://…". The upstream's not-found answer to a
// resources/read is now given in Gatehouse's words, the same code and message as a hidden one. Real
// server-everything (stdio) behind the gateway; modern and 2025-11-25 clients.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, legacySession, modernRequest, post, rpc } from '../helpers/http.js';

const EVERYTHING = { name: 'everything', command: [process.execPath, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'], uriPrefixes: ['demo://'] };
/** Exists upstream (a template's resource), hidden by the rule below. */
const HIDDEN = 'demo://resource/dynamic/text/1';
/** Visible under the rule, missing upstream. */
const MISSING = 'demo://resource/static/document/nope.md';
/** Visible and present. */
const PRESENT = 'demo://resource/static/document/architecture.md';
let gw: TestGateway;

before(async () => {
  gw = await startGateway({ upstreams: [EVERYTHING], policy: { rules: [{ id: 'static-only', access: 'allow', resources: ['demo://resource/static/*'] }] } });
});
after(async () => {
  await gw?.close();
});

/** An error answer with its URI replaced by X, so that two answers about two URIs compare. */
function shape(error: { code: number; message: string; data?: unknown } | undefined, uri: string) {
  assert.ok(error, 'an error answer');
  return JSON.stringify(error).split(uri).join('X');
}

test('a modern client: a hidden resource and a missing one get the same code and message', async () => {
  const read = async (id: number, uri: string) => {
    const req = modernRequest(id, 'resources/read', { uri });
    return (await post(gw.url, req.body, req.headers)).json();
  };
  const present = await read(1, PRESENT);
  assert.equal(present.error, undefined, JSON.stringify(present.error));
  assert.equal(present.result.contents[0].uri, PRESENT);
  const hidden = await read(2, HIDDEN);
  const missing = await read(3, MISSING);
  assert.equal(hidden.error.code, -32602);
  assert.equal(shape(missing.error, MISSING), shape(hidden.error, HIDDEN));
});

test('a 2025-11-25 client: the same', async () => {
  const session = await legacySession(gw.url);
  const headers = { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
  const read = async (id: number, uri: string) => (await post(gw.url, rpc(id, 'resources/read', { uri }), headers)).json();
  assert.equal((await read(1, PRESENT)).result.contents[0].uri, PRESENT);
  const hidden = await read(2, HIDDEN);
  const missing = await read(3, MISSING);
  assert.equal(shape(missing.error, MISSING), shape(hidden.error, HIDDEN));
});
