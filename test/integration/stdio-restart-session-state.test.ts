// A perSession child that crashes is replaced under the same session, and the client's initialize is
// replayed (src/upstream/README.md §stdio). The client also set state on its session that the new child
// does not have: the logging level it asked for (2025-11-25/server/utilities/logging.mdx §Setting Log Level)
// and the resources it subscribed to (server/resources.mdx §Subscriptions). The client is not told of the
// restart, so it goes on believing both hold: until 4 December the new child logged at its default level
// and sent no resource updates, silently. The last level set and the subscriptions still held are now
// replayed to the new child before the session serves again.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';
import { gatewaysCheckedForLeakedChildren } from '../helpers/stdio-children.js';

const FAKE = fileURLToPath(new URL('../fixtures/upstreams/stdio-fake.mjs', import.meta.url));
const gateways = gatewaysCheckedForLeakedChildren();

test('perSession: after a crash, the new child has the logging level and the subscriptions the client set', { timeout: 30_000 }, async () => {
  const gw = await startGateway({ upstreams: [{ name: 'fake', command: [process.execPath, FAKE], env: { SESSION_STATE: '1' }, era: 'legacy', processes: 'perSession', restart: { attempts: 3, firstDelayMs: 50 } }] });
  gateways.push(gw);
  const init = await post(gw.url, rpc(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
  assert.equal(init.status, 200, init.text);
  const headers = { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']) };
  const state = async (id: number): Promise<unknown> => {
    const res = await post(gw.url, rpc(id, 'tools/call', { name: 'state' }), headers);
    assert.equal(res.status, 200, res.text);
    return JSON.parse(res.json().result.content[0].text as string);
  };
  for (const [id, method, params] of [[1, 'logging/setLevel', { level: 'info' }], [2, 'logging/setLevel', { level: 'debug' }], [3, 'resources/subscribe', { uri: 'file:///a' }], [4, 'resources/subscribe', { uri: 'file:///b' }], [5, 'resources/unsubscribe', { uri: 'file:///a' }]] as const) {
    const res = await post(gw.url, rpc(id, method, params), headers);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json().result, {}, res.text);
  }
  const before = { level: 'debug', subscriptions: ['file:///b'] };
  assert.deepEqual(await state(6), before);
  const crash = await post(gw.url, rpc(7, 'tools/call', { name: 'crash' }), headers);
  assert.equal(crash.status, 503, crash.text);
  assert.deepEqual(await state(8), before, 'the new child has what the client set on its session');
});
