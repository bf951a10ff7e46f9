// The authorization server's key set down, later back: every token is refused 503 meanwhile (fail closed,
// README "If the key set … is unreachable, Gatehouse answers 503"), and the log must say so once, not once
// per refused request: the error "cannot verify tokens now; refusing requests until it recovers" was written
// for every request, so an outage under load buried the log in identical error lines, and nothing said when
// tokens were accepted again. Real gateway, real authorization server (test/helpers/auth-server.ts) whose
// key set answers 503 while "down".
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startAuthServer, type AuthServer } from '../helpers/auth-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest } from '../helpers/http.js';
import { jsonEchoServer, startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';

const PUBLIC_URL = 'https://mcp.example.test/mcp';
let as: AuthServer;
let upstream: FakeUpstream;
let gw: TestGateway;
/** Serves the authorization server's key set, or 503 while `down`. */
let keys: Server;
let down = true;

before(async () => {
  as = await startAuthServer();
  keys = createServer((_req, res) => {
    if (down) return void res.writeHead(503).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: as.published.map((k) => k.publicJwk) }));
  });
  await new Promise<void>((r) => keys.listen(0, '127.0.0.1', () => r()));
  upstream = await startFakeUpstream(jsonEchoServer);
  gw = await startGateway({
    listen: { publicUrl: PUBLIC_URL },
    upstreams: [{ name: 'up', url: upstream.url }],
    auth: { oauth: { issuer: as.issuer, jwksUri: `http://127.0.0.1:${(keys.address() as AddressInfo).port}/jwks`, audience: PUBLIC_URL, jwksMinRefreshSeconds: 1 } },
  });
});

after(async () => {
  await gw?.close();
  await upstream?.close();
  keys?.closeAllConnections();
  await new Promise<void>((r) => (keys ? keys.close(() => r()) : r()));
  await as?.close();
});

async function list(token: string): Promise<number> {
  const m = modernRequest(1, 'tools/list');
  const res = await fetch(gw.url, { method: 'POST', headers: { ...m.headers, authorization: `Bearer ${token}` }, body: m.body });
  await res.body?.cancel();
  return res.status;
}

const lines = (msg: RegExp): Array<Record<string, unknown>> => gw.logs.filter((l) => typeof l.msg === 'string' && msg.test(l.msg));

test('an outage is logged once when it starts, and once when tokens are accepted again', async () => {
  const token = await as.sign({ sub: 'alice', aud: PUBLIC_URL });
  for (let i = 0; i < 30; i++) assert.equal(await list(token), 503, `request ${i + 1} during the outage`);
  const errors = gw.logs.filter((l) => l.level === 'error');
  assert.equal(lines(/cannot verify tokens now/).length, 1, `one error for the outage, not one per request: ${JSON.stringify(errors.slice(0, 3))}`);
  down = false;
  let status = 503;
  for (let i = 0; i < 30 && status === 503; i++) {
    await new Promise((r) => setTimeout(r, 200));
    status = await list(token);
  }
  assert.equal(status, 200, 'tokens are accepted once the key set is back');
  const recovered = lines(/tokens can be verified again/);
  assert.equal(recovered.length, 1, 'the recovery is logged');
  assert.equal(recovered[0]!.level, 'info');
  // A second outage is reported again.
  down = true;
  await new Promise((r) => setTimeout(r, 1100));
  const stale = await as.sign({ sub: 'alice', aud: PUBLIC_URL }, { kid: 'not-yet-published' });
  assert.equal(await list(stale), 503);
  assert.equal(lines(/cannot verify tokens now/).length, 2);
});
