// completion/complete names a prompt or a resource (a URI or URI template: server/utilities/completion.mdx
// §Data Types). One the access rules hide from the caller must be answered exactly like one that does not
// exist (the same code, message and data), or a caller learns what the rules hide by asking for completions
// (README "Access rules"; resources/read does this already: resources-hidden-like-missing.test.ts). Until
// 5 December a template nobody listed but under an upstream's `uriPrefixes` went to that upstream and came
// back in its words ("MCP error -32602: Resource template demo://… not found" from server-everything),
// while a hidden one got Gatehouse's "Resource not found: demo://…". The upstream's not-found answer to a
// completion about a URI no member listed is now given in Gatehouse's words. Real server-everything (stdio)
// behind the gateway; modern and 2025-11-25 clients.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, legacySession, modernRequest, post, rpc } from '../helpers/http.js';

const EVERYTHING = { name: 'everything', command: [process.execPath, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'], uriPrefixes: ['demo://'] };
/** Listed by server-everything; the rule below lets the caller see it. */
const VISIBLE_TEMPLATE = 'demo://resource/dynamic/text/{resourceId}';
/** Listed by server-everything, hidden by the rule below. */
const HIDDEN_TEMPLATE = 'demo://resource/dynamic/blob/{resourceId}';
/** Visible under the rule, under the upstream's uriPrefixes, unknown to the upstream. */
const MISSING_TEMPLATE = 'demo://resource/static/nope/{resourceId}';
/** Visible under the rule, under no upstream's uriPrefixes. */
const UNOWNED_TEMPLATE = 'elsewhere://nope/{resourceId}';
/** A concrete URI, visible, under the prefix, unknown to the upstream. */
const MISSING_URI = 'demo://resource/static/document/nope.md';
const HIDDEN_URI = 'demo://resource/dynamic/blob/1';

let gw: TestGateway;

before(async () => {
  gw = await startGateway({
    upstreams: [EVERYTHING],
    policy: { rules: [{ id: 'some', access: 'allow', tools: ['*'], resources: ['demo://resource/dynamic/text/*', 'demo://resource/static/*', 'elsewhere://*'], prompts: ['everything/completable-prompt'] }] },
  });
});
after(async () => {
  await gw?.close();
});

/** An error answer with the name or URI it is about replaced by X, so that two answers about two items compare. */
function shape(error: { code: number; message: string; data?: unknown } | undefined, about: string): string {
  assert.ok(error, 'an error answer');
  return JSON.stringify(error).split(about).join('X');
}

const promptRef = (name: string) => ({ ref: { type: 'ref/prompt', name }, argument: { name: 'department', value: 'E' } });
const resourceRef = (uri: string) => ({ ref: { type: 'ref/resource', uri }, argument: { name: 'resourceId', value: '1' } });

type Ask = (params: Record<string, unknown>) => Promise<{ result?: { completion: { values: string[] } }; error?: { code: number; message: string; data?: unknown } }>;

async function assertHiddenLikeMissing(ask: Ask): Promise<void> {
  // What the caller may see is completed.
  assert.deepEqual((await ask(promptRef('completable-prompt'))).result?.completion.values, ['Engineering']);
  assert.deepEqual((await ask(resourceRef(VISIBLE_TEMPLATE))).result?.completion.values, ['1']);
  // A hidden prompt and a missing one.
  const hiddenPrompt = await ask(promptRef('simple-prompt'));
  assert.equal(hiddenPrompt.error?.code, -32602);
  assert.equal(shape((await ask(promptRef('nope-prompt'))).error, 'nope-prompt'), shape(hiddenPrompt.error, 'simple-prompt'));
  // A hidden template, and missing ones: one an upstream's uriPrefixes own, one nobody owns.
  const hidden = await ask(resourceRef(HIDDEN_TEMPLATE));
  assert.equal(hidden.error?.code, -32602);
  assert.equal(shape((await ask(resourceRef(MISSING_TEMPLATE))).error, MISSING_TEMPLATE), shape(hidden.error, HIDDEN_TEMPLATE));
  assert.equal(shape((await ask(resourceRef(UNOWNED_TEMPLATE))).error, UNOWNED_TEMPLATE), shape(hidden.error, HIDDEN_TEMPLATE));
  // The same for a concrete URI.
  const hiddenUri = await ask(resourceRef(HIDDEN_URI));
  assert.equal(shape((await ask(resourceRef(MISSING_URI))).error, MISSING_URI), shape(hiddenUri.error, HIDDEN_URI));
}

test('a modern client: completions about a hidden prompt or resource read like those about a missing one', async () => {
  let id = 0;
  await assertHiddenLikeMissing(async (params) => {
    const req = modernRequest(++id, 'completion/complete', params);
    return (await post(gw.url, req.body, req.headers)).json();
  });
});

test('a 2025-11-25 client: the same', async () => {
  const session = await legacySession(gw.url);
  const headers = { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
  let id = 0;
  await assertHiddenLikeMissing(async (params) => (await post(gw.url, rpc(++id, 'completion/complete', params), headers)).json());
});
