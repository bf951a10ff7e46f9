// A legacy server that answers a session it no longer knows with 400 "Bad Request: No valid session ID
// provided" rather than 404, as the v1 SDK's examples did until 2026 (typescript-sdk#389) and the Python SDK's
// session manager did (python-sdk#1727): the modern-client bridge starts a new session and sends the request
// once more, as for a 404 (2025-11-25/basic/transports.mdx §Session Management 3-4: a session may end at any
// time; the client then MUST start a new one). Until 5 December the pooled session was kept and every call on
// it failed with the server's -32000, for good. Which 400s are about the session: test/unit/upstream/session-unknown.test.ts.
// Upstream: a real v1 SDK server, routed as the SDK's examples route sessions.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { modernRequest, post } from '../helpers/http.js';
import { startGatewayInFrontOfSession400Server } from '../helpers/session-400-upstream.js';

const { up, gw, close } = await startGatewayInFrontOfSession400Server();
after(close);

async function echo(id: number, text: string) {
  const req = modernRequest(id, 'tools/call', { name: 'echo', arguments: { text } });
  return post(gw.url, req.body, req.headers);
}

test('a session the restarted server answers with 400 "No valid session ID provided" is replaced, and the call sent again once', async () => {
  const first = await echo(1, 'before');
  assert.equal(first.status, 200, first.text);
  assert.equal(first.json().result.content[0].text, 'before');
  const initializes = (): number => up.messages.filter((m) => m.method === 'initialize').length;
  const before = initializes();
  up.forgetSessions(); // restarted: every session it had is gone
  const again = await echo(2, 'after');
  assert.equal(again.status, 200, again.text);
  assert.equal(again.json().result?.content?.[0]?.text, 'after', again.text);
  assert.equal(initializes(), before + 1, 'one new session');
  const third = await echo(3, 'still');
  assert.equal(third.json().result?.content?.[0]?.text, 'still', 'later calls go on the new session');
});
