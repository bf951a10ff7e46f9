// The admin API's authentication is held to auth.failureLimit like the MCP endpoint's, and on the same count
// per client address: guessing the admin token (as a bearer or on the login form) past the limit gets 429
// with Retry-After, then the address is refused on both ports until the window ends. Client addresses other
// than 127.0.0.1 are other loopback addresses, which Linux routes to the same interface.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'undici';
import { hashKey } from '../../src/auth/key-hash.js';
import { jsonResult, startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, rpc } from '../helpers/http.js';

const ADMIN = 'admin-token-0123456789abcdefghij';
const KEY = 'gh_admin_limit_key_0123456789abcdefghijk';
let up: FakeUpstream;
let gw: TestGateway;

before(async () => {
  up = await startFakeUpstream((_req, res, body) => jsonResult(res, body, {}, body.includes('"initialize"') ? { 'mcp-session-id': 'up-1' } : {}));
  gw = await startGateway({
    upstreams: [{ name: 'up', url: up.url, era: 'legacy' }],
    // A day's window: windows are fixed on the store's clock, and one ending mid-test would lift a block.
    auth: { apiKeys: [{ id: 'k', hash: hashKey(KEY), scopes: [] }], failureLimit: { attempts: 2, windowSeconds: 86_400 } },
    admin: { enabled: true, port: 0, token: ADMIN },
  });
});
after(async () => {
  await gw.close();
  await up.close();
});

async function send(from: string, url: string, init: { method: 'GET' | 'POST'; headers?: Record<string, string>; body?: string }) {
  const dispatcher = new Agent({ localAddress: from });
  try {
    const res = await request(url, { ...init, dispatcher });
    return { status: res.statusCode, retryAfter: res.headers['retry-after'], text: await res.body.text() };
  } finally {
    await dispatcher.close();
  }
}
const approvals = (from: string, credential?: string) => send(from, `${gw.gateway.adminUrl}/approvals`, { method: 'GET', headers: credential === undefined ? {} : { authorization: `Bearer ${credential}` } });
const login = (from: string, credential: string) =>
  send(from, `${gw.gateway.adminUrl}/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ credential }).toString() });
const mcp = (from: string) => send(from, gw.url, { method: 'POST', headers: { ...LEGACY_HEADERS, authorization: `Bearer ${KEY}` }, body: rpc(1, 'ping') });

test('bearer guesses on the admin API past the limit: 429 with Retry-After, even with the right token, and on the MCP endpoint too', async () => {
  assert.equal((await approvals('127.0.0.1', ADMIN)).status, 200);
  assert.equal((await approvals('127.0.0.1', 'guess-1')).status, 401);
  assert.equal((await approvals('127.0.0.1', 'guess-2')).status, 401);
  const blocked = await approvals('127.0.0.1', ADMIN);
  assert.equal(blocked.status, 429, blocked.text);
  const wait = Number(blocked.retryAfter);
  assert.ok(wait >= 1 && wait <= 86_400, `Retry-After ${String(blocked.retryAfter)}`);
  assert.equal(JSON.parse(blocked.text).error.code, 'auth_failure_limit');
  assert.equal((await mcp('127.0.0.1')).status, 429, 'one count per address for both ports');
  // Another address is judged on its own.
  assert.equal((await approvals('127.0.0.2', ADMIN)).status, 200);
  assert.equal((await mcp('127.0.0.2')).status, 200);
});

test('login form guesses count too; a blocked address cannot log in with the right token', async () => {
  assert.equal((await login('127.0.0.3', 'guess-1')).status, 401);
  assert.equal((await login('127.0.0.3', 'guess-2')).status, 401);
  const blocked = await login('127.0.0.3', ADMIN);
  assert.equal(blocked.status, 429);
  assert.ok(Number(blocked.retryAfter) >= 1);
  assert.equal((await approvals('127.0.0.3', ADMIN)).status, 429);
});

test('a request without a credential is no guess', async () => {
  for (let i = 0; i < 4; i++) assert.equal((await approvals('127.0.0.4')).status, 401);
  assert.equal((await approvals('127.0.0.4', ADMIN)).status, 200);
});
