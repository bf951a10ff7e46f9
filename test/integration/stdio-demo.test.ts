// A 2025-era client (v1 SDK) over Streamable HTTP through Gatehouse to server-everything run as a stdio
// child: the gateway hosts the session (one child per session) and routes the child's messages to the right
// HTTP stream. Spec: shared/spec/docs/specification/2025-11-25/basic/transports.mdx (LT).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import { assertElicitationRoundTrip, assertEverythingToolsListed, assertProgressRelayedOneByOne, connectV1, textOf, withConnection, type Connected } from '../helpers/v1-everything.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { isAlive, stdioChildPids, waitUntil } from '../helpers/stdio-children.js';

const PROTOCOL_VERSION = '2025-11-25';
const EVERYTHING = 'node_modules/@modelcontextprotocol/server-everything/dist/index.js';

let gw: TestGateway;

function connect(opts: { elicitation?: (req: ElicitRequest) => Record<string, unknown> } = {}): Promise<Connected> {
  return connectV1(gw.url, { name: 'gatehouse-stdio-test', timeoutMs: 15_000, ...opts });
}

/** The PID of the child backing a gateway session, from the gateway's "session started" log line. */
function pidOfSession(sessionId: string): number | undefined {
  const line = gw.logs.find((l) => l.msg === 'session started' && l.session === sessionId.slice(0, 8));
  return typeof line?.pid === 'number' ? line.pid : undefined;
}

describe('stdio demo: v1 client → Gatehouse → server-everything (stdio child per session)', () => {
  before(async () => {
    gw = await startGateway({ upstreams: [{ name: 'everything', command: [process.execPath, EVERYTHING, 'stdio'], processes: 'perSession' }] });
  });

  after(async () => {
    await gw?.close();
    // The gateway stops its children on close; anything it left behind is stopped here, by PID.
    for (const pid of stdioChildPids(gw)) {
      if (isAlive(pid)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone in the meantime
        }
      }
    }
  });

  // LT §Session Management 1: the server (here the gateway, hosting a stdio child) MAY assign a session id
  // on the InitializeResult response; the client sends it on every later request.
  test('initialize starts a child process and returns a session id', async () => {
    await withConnection(connect(), async ({ client, transport }) => {
      const sid = transport.sessionId;
      assert.equal(typeof sid, 'string');
      // LT §Session Management 1: the id MUST only contain visible ASCII characters (0x21 to 0x7E).
      assert.match(sid!, /^[\x21-\x7e]+$/);
      assert.equal(client.getServerVersion()?.name, 'mcp-servers/everything');
      assert.equal(transport.protocolVersion, PROTOCOL_VERSION);
      const pid = pidOfSession(sid!);
      assert.ok(pid !== undefined, 'the gateway logged no child process for this session');
      assert.ok(isAlive(pid), `child ${pid} is not running`);
      assert.deepEqual(await client.ping(), {});
    });
  });

  // LT §Sending Messages 5: tools/list answered on the POST.
  test('tools/list', async () => {
    await withConnection(connect({ elicitation: () => ({ action: 'cancel' }) }), async ({ client }) => {
      await assertEverythingToolsListed(client);
    });
  });

  // LT §Sending Messages 5: tools/call of `echo`.
  test('tools/call echo', async () => {
    await withConnection(connect(), async ({ client }) => {
      const result = await client.callTool({ name: 'echo', arguments: { message: 'hello over stdio' } });
      assert.equal(textOf(result), 'Echo: hello over stdio');
    });
  });

  // LT §Sending Messages 6: notifications related to a request travel on its POST's SSE stream before the
  // response; the gateway routes the child's progress (by progressToken) to that stream as it happens.
  test('progress notifications arrive one by one, before the result', async () => {
    await withConnection(connect(), async ({ client }) => {
      await assertProgressRelayedOneByOne(client);
    });
  });

  // LT §Sending Messages 6 (server requests on the POST stream) and 4 (the client's response POSTed back,
  // 202): the child's elicitation/create reaches the client, and its answer reaches the child.
  test('elicitation round trip', async () => {
    await assertElicitationRoundTrip(connect, { name: 'Grace Stdio', check: false });
  });

  // LT §Session Management 3-5: DELETE ends the session (the gateway stops the child), and a request with
  // that id MUST then get 404; the gateway's body is a JSON-RPC error with code -32001 (session not found).
  test('DELETE ends the session and stops the child; the old id then gets 404 / -32001', async () => {
    await withConnection(connect(), async ({ transport }) => {
      const sid = transport.sessionId!;
      const pid = pidOfSession(sid);
      assert.ok(pid !== undefined, 'the gateway logged no child process for this session');
      assert.ok(isAlive(pid));

      await transport.terminateSession();
      assert.equal(transport.sessionId, undefined);
      assert.ok(await waitUntil(() => !isAlive(pid), 10_000), `child ${pid} still running 10 s after DELETE`);

      const res = await fetch(gw.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': PROTOCOL_VERSION, 'mcp-session-id': sid },
        body: JSON.stringify({ jsonrpc: '2.0', id: 'after-delete', method: 'tools/list' }),
        signal: AbortSignal.timeout(10_000),
      });
      const text = await res.text();
      assert.equal(res.status, 404, `expected 404, got ${res.status} ${text}`);
      const body = JSON.parse(text) as { id?: unknown; error?: { code: number } };
      assert.equal(body.error?.code, -32001);
      assert.equal(body.id, 'after-delete');
    });
  });
});
