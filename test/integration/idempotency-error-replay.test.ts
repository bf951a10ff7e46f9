// A retried write is answered its first call's stored answer, marked as a replay (README, Idempotent writes:
// "the stored answer, with `_meta["dev.gatehouse/replayed"]: true`; nothing runs"). An answer that is a
// JSON-RPC error (the upstream refused the arguments, or failed inside: -32602, -32603) is stored as well,
// since the upstream may have acted before it failed; but an error has no `_meta`, and until 4 December its
// replay carried no mark at all: a client retrying after an internal error got the same error again, and
// took it for the upstream failing anew, when nothing had run. Now the mark is in the error's `data`.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { jsonResult } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';

let up: FakeUpstream;
let gw: TestGateway;
let calls = 0;
before(async () => {
  up = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown; method: string; params?: { arguments?: { data?: unknown } } };
    if (msg.method === 'initialize') return jsonResult(res, body, { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'error-fake', version: '1' } });
    if (msg.method === 'tools/list') return jsonResult(res, body, { tools: [{ name: 'write', inputSchema: { type: 'object' }, annotations: { destructiveHint: true } }] });
    if (msg.id === undefined) return void res.writeHead(202).end();
    calls++;
    const data = msg.params?.arguments?.data;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32602, message: 'account is frozen', ...(data !== undefined ? { data } : {}) } }));
  });
  gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }], idempotency: { requireKeys: true } });
});
after(async () => {
  await gw.close();
  await up.close();
});

let n = 0;
async function write(args: Record<string, unknown>, key: string) {
  const res = await post(gw.url, rpc(++n, 'tools/call', { name: 'write', arguments: args, _meta: { idempotencyKey: key } }), LEGACY_HEADERS);
  return res.json() as { id: number; error?: { code: number; message: string; data?: unknown } };
}

test('a stored JSON-RPC error is replayed marked, its own data kept', async () => {
  const first = await write({ data: { reason: 'frozen' } }, 'error-replay-key-1');
  assert.deepEqual(first.error, { code: -32602, message: 'account is frozen', data: { reason: 'frozen' } });
  const again = await write({ data: { reason: 'frozen' } }, 'error-replay-key-1');
  assert.equal(calls, 1, 'nothing ran again');
  assert.equal(again.id, n, 'the retry\'s own id');
  assert.deepEqual(again.error, { code: -32602, message: 'account is frozen', data: { reason: 'frozen', 'dev.gatehouse/replayed': true } });
});

test('an error without data gets data holding the mark alone', async () => {
  await write({}, 'error-replay-key-2');
  const again = await write({}, 'error-replay-key-2');
  assert.deepEqual(again.error, { code: -32602, message: 'account is frozen', data: { 'dev.gatehouse/replayed': true } });
});
