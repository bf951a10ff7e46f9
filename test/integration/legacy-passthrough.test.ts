// A 2025-era client (v1 SDK) through Gatehouse to the reference server-everything over Streamable HTTP:
// the gateway must be invisible. Spec: shared/spec/docs/specification/2025-11-25/basic/transports.mdx (LT).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import { assertElicitationRoundTrip, assertEverythingToolsListed, assertProgressRelayedOneByOne, connectV1, textOf, withConnection, type Connected } from '../helpers/v1-everything.js';
import { startEverythingHttp, type EverythingHttp } from '../fixtures/upstreams/everything-http.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const PROTOCOL_VERSION = '2025-11-25';

let upstream: EverythingHttp;
let gw: TestGateway;

function connect(opts: { elicitation?: (req: ElicitRequest) => Record<string, unknown> } = {}): Promise<Connected> {
  return connectV1(gw.url, { name: 'gatehouse-legacy-test', timeoutMs: 10_000, ...opts });
}

/** One raw JSON-RPC POST, for checks the SDK client hides (status codes, empty bodies). */
async function rawPost(url: string, body: unknown, sessionId: string | undefined): Promise<{ status: number; text: string; contentType: string | null }> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': PROTOCOL_VERSION,
  };
  if (sessionId !== undefined) headers['mcp-session-id'] = sessionId;
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(10_000) });
  return { status: res.status, text: await res.text(), contentType: res.headers.get('content-type') };
}

/** The JSON-RPC message in a JSON or single-event SSE body. */
function messageOf(text: string): Record<string, unknown> {
  const data = text.includes('data:')
    ? text.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).filter((d) => d !== '').at(-1) ?? ''
    : text;
  return JSON.parse(data) as Record<string, unknown>;
}

describe('legacy pass-through: v1 client → Gatehouse → server-everything (Streamable HTTP)', () => {
  before(async () => {
    upstream = await startEverythingHttp();
    gw = await startGateway({ upstreams: [{ name: 'everything', url: upstream.url }] });
  });

  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  // LT §Session Management 1-2: the server MAY assign a session id on the InitializeResult response; the
  // client MUST send it on every later request. The id seen by the client is the one the upstream minted.
  test('initialize returns the upstream-minted Mcp-Session-Id, and it works for later requests', async () => {
    await withConnection(connect(), async ({ client, transport }) => {
      const sid = transport.sessionId;
      assert.equal(typeof sid, 'string');
      assert.ok(sid!.length > 0);
      assert.equal(client.getServerVersion()?.name, 'mcp-servers/everything');
      // The upstream logs every id it mints; the client's id is one of them, unchanged.
      assert.ok(upstream.output().includes(`Session initialized with ID: ${sid}`), `upstream never minted ${sid}`);
      // And the upstream itself accepts that id when asked directly (no gateway in between).
      const direct = await rawPost(upstream.url, { jsonrpc: '2.0', id: 'direct-ping', method: 'ping' }, sid);
      assert.equal(direct.status, 200);
      assert.deepEqual(messageOf(direct.text), { jsonrpc: '2.0', id: 'direct-ping', result: {} });
      // A later request through the gateway on the same session succeeds.
      assert.deepEqual(await client.ping(), {});
    });
  });

  // LT §Sending Messages 5: a POSTed request is answered with application/json or an SSE stream carrying
  // the response; here tools/list.
  test('tools/list', async () => {
    await withConnection(connect({ elicitation: () => ({ action: 'cancel' }) }), async ({ client }) => {
      const tools = await assertEverythingToolsListed(client);
      const echo = tools.find((t) => t.name === 'echo')!;
      assert.equal(echo.inputSchema.type, 'object');
      assert.ok(echo.inputSchema.properties && 'message' in echo.inputSchema.properties);
    });
  });

  // LT §Sending Messages 5: request → response on the same POST; tools/call of `echo`.
  test('tools/call echo', async () => {
    await withConnection(connect(), async ({ client }) => {
      const result = await client.callTool({ name: 'echo', arguments: { message: 'hello through the gate' } });
      assert.equal(result.isError, undefined);
      assert.equal(textOf(result), 'Echo: hello through the gate');
    });
  });

  // LT §Sending Messages 6: the server MAY send notifications on the POST's SSE stream before the
  // response; they must be relayed as they happen (event by event), not held back until the end.
  test('progress notifications of a long-running tool arrive one by one, before the result', async () => {
    await withConnection(connect(), async ({ client }) => {
      await assertProgressRelayedOneByOne(client);
    });
  });

  // LT §Sending Messages 5 (resources/read answered on the POST).
  test('resources/read', async () => {
    await withConnection(connect(), async ({ client }) => {
      const uri = 'demo://resource/dynamic/text/1';
      const { contents } = await client.readResource({ uri });
      assert.equal(contents.length, 1);
      assert.equal(contents[0]!.uri, uri);
      assert.equal(contents[0]!.mimeType, 'text/plain');
      assert.match(String((contents[0] as { text?: string }).text), /^Resource 1: This is a plaintext resource/);
    });
  });

  // LT §Sending Messages 5 (prompts/get answered on the POST).
  test('prompts/get', async () => {
    await withConnection(connect(), async ({ client }) => {
      const prompt = await client.getPrompt({ name: 'args-prompt', arguments: { city: 'Lisbon', state: 'Estremadura' } });
      assert.equal(prompt.messages.length, 1);
      assert.equal(prompt.messages[0]!.role, 'user');
      assert.deepEqual(prompt.messages[0]!.content, { type: 'text', text: "What's weather in Lisbon, Estremadura?" });
    });
  });

  // LT §Sending Messages 6: the server MAY send requests on the POST's SSE stream before the response; the
  // client answers with a new POST carrying the JSON-RPC response (§Sending Messages 4, answered 202).
  test('elicitation round trip: server request on the POST stream, client answer reaches the tool', async () => {
    await assertElicitationRoundTrip(connect, { name: 'Ada Gatehouse', check: true });
  });

  // LT §Sending Messages 4: a POSTed notification the server accepts is answered 202 Accepted, no body.
  test('a notification POST is answered 202 with no body', async () => {
    await withConnection(connect(), async ({ transport }) => {
      const res = await rawPost(gw.url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'no-such-request', reason: 'test' } }, transport.sessionId);
      assert.equal(res.status, 202);
      assert.equal(res.text, '');
    });
  });

  // LT §Session Management 3-5: the client SHOULD DELETE to end a session; the server then MUST answer
  // requests carrying that id with 404. The DELETE reaches the upstream (which then no longer knows the
  // id), and the gateway, which saw the session end, answers the dead id itself with 404 / -32001
  // (server-everything would answer 400 / -32000 instead) without forwarding it.
  test('session DELETE ends the upstream session', async () => {
    await withConnection(connect(), async ({ transport }) => {
      const sid = transport.sessionId!;
      const before = await rawPost(upstream.url, { jsonrpc: '2.0', id: 'before', method: 'ping' }, sid);
      assert.equal(before.status, 200, 'the session works before DELETE');

      await transport.terminateSession();
      assert.equal(transport.sessionId, undefined);

      // The upstream itself no longer knows the session: the DELETE went through.
      const direct = await rawPost(upstream.url, { jsonrpc: '2.0', id: 'after-direct', method: 'ping' }, sid);
      assert.ok(direct.status >= 400 && direct.status < 500, `the upstream still serves the session: ${direct.status} ${direct.text}`);
      // Through the gateway the old id is a session that ended: 404 / -32001, the reason given.
      const viaGateway = await rawPost(gw.url, { jsonrpc: '2.0', id: 'after-gw', method: 'ping' }, sid);
      assert.equal(viaGateway.status, 404, `gateway answered ${viaGateway.status} ${viaGateway.text}`);
      assert.deepEqual(messageOf(viaGateway.text), { jsonrpc: '2.0', id: 'after-gw', error: { code: -32001, message: 'Session not found; initialize a new session', data: { details: { reason: 'client_closed' } } } });
    });
  });
});
