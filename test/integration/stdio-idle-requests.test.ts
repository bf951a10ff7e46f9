// A stdio server's request that arrives when no call is in flight on its child and no GET stream is open
// there (a roots/list or sampling request sent at an idle moment) is answered, not dropped: every JSON-RPC
// request gets a response (2025-11-25/basic/index.mdx §Responses: "Responses MUST include the same ID as
// the request they correspond to"; JSON-RPC 2.0 §4), and a server left waiting for one waits for ever.
// With no caller to put it to, Gatehouse answers as a client that lacks the method does: -32601
// (2025-11-25/client/roots.mdx §Error Handling: "Client does not support roots: -32601"), as a request
// on a session's GET stream with no call to carry it is (listen-hub.ts).

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, modernRequest, post, rpc } from '../helpers/http.js';

const gw = await startGateway({
  upstreams: [{ name: 'asker', command: [process.execPath, 'test/fixtures/upstreams/idle-asker-stdio.mjs'], processes: 'shared', era: 'legacy' }],
});
after(() => gw.close());

async function call(id: number, name: string): Promise<string> {
  const req = modernRequest(id, 'tools/call', { name, arguments: {} });
  const res = await post(gw.url, req.body, req.headers);
  const text = (res.json().result?.content as Array<{ text?: string }> | undefined)?.[0]?.text;
  assert.equal(typeof text, 'string', res.text);
  return text!;
}

test('a request a stdio child sends with no call in flight and no GET stream open is answered -32601', async () => {
  assert.equal(await call(1, 'later'), 'asking later');
  let replies: Record<string, { error?: { code: number } }> = {};
  for (let i = 0; i < 40 && Object.keys(replies).length < 2; i++) {
    await new Promise((r) => setTimeout(r, 100));
    replies = JSON.parse(await call(100 + i, 'report')) as typeof replies;
  }
  assert.equal(replies['idle-roots-1']?.error?.code, -32601, JSON.stringify(replies));
  assert.equal(replies['idle-sampling-1']?.error?.code, -32601, JSON.stringify(replies));
});

test('in processes: perSession, a ping a child sends with no call in flight and no GET stream open is answered at once', async () => {
  // basic/utilities/ping.mdx §Behavior Requirements: "The receiver MUST respond promptly". Kept for a GET
  // stream the client may never open, it was answered late or never. (Its other requests wait there for
  // the client's own GET stream: that session is the client's.)
  const own = await startGateway({
    upstreams: [{ name: 'asker', command: [process.execPath, 'test/fixtures/upstreams/idle-asker-stdio.mjs'], processes: 'perSession', era: 'legacy' }],
  });
  try {
    const init = await post(own.url, rpc('init', 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'idle', version: '0' } }), LEGACY_HEADERS);
    const session = init.headers['mcp-session-id'] as string;
    assert.equal(typeof session, 'string', init.text);
    const headers = { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
    await post(own.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), headers);
    const text = async (id: number, name: string): Promise<string> => {
      const res = await post(own.url, rpc(id, 'tools/call', { name, arguments: {} }), headers);
      return String((res.json().result?.content as Array<{ text?: string }> | undefined)?.[0]?.text);
    };
    assert.equal(await text(1, 'later'), 'asking later');
    // Past the child's 200 ms, so that the ping comes while no call is in flight (a report's would carry it).
    await new Promise((r) => setTimeout(r, 400));
    let replies: Record<string, { result?: unknown }> = {};
    for (let i = 0; i < 40 && replies['idle-ping-1'] === undefined; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 100));
      replies = JSON.parse(await text(100 + i, 'report')) as typeof replies;
    }
    assert.deepEqual(replies['idle-ping-1'], { result: {} }, JSON.stringify(replies));
  } finally {
    await own.close();
  }
});
