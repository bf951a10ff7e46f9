// The door's limits on hostile clients: slow headers are cut at listen.headersTimeoutMs, one address
// cannot hold more than listen.maxConnectionsPerIp sockets, an ambiguous request (a singleton header sent
// twice) is refused, and an address that keeps failing authentication is refused with 429 before any
// credential is looked at (DESIGN.md §7: the failed-auth limit comes first). Client addresses other than
// 127.0.0.1 are other loopback addresses (127.0.0.2, …), which Linux routes to the same interface.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { Agent, request } from 'undici';
import { hashKey } from '../../src/auth/key-hash.js';
import { jsonResult, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startAuthServer } from '../helpers/auth-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, rpc } from '../helpers/http.js';
import { waitUntil } from '../helpers/stdio-children.js';

const KEY = 'gh_limits_key_0123456789abcdefghijklmnopqrs';
const up = await startFakeUpstream((_req, res, body) => jsonResult(res, body, {}, body.includes('"initialize"') ? { 'mcp-session-id': 'up-1' } : {}));
const cleanups: Array<() => Promise<unknown>> = [() => up.close()];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function gateway(extra: Record<string, unknown>): Promise<TestGateway> {
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }], ...extra });
  cleanups.push(() => gw.close());
  return gw;
}

/** A raw connection from a given loopback address; resolves once connected. */
function rawSocket(url: string, localAddress = '127.0.0.1'): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const s = connect({ host: hostname, port: Number(port), localAddress }, () => resolve(s));
    s.once('error', reject);
  });
}

/** Everything the server writes until it closes the connection (bounded by `timeoutMs`). */
function readUntilClosed(s: Socket, timeoutMs: number): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    let text = '';
    const timer = setTimeout(() => resolve({ text, closed: false }), timeoutMs);
    s.on('data', (d: Buffer) => (text += d.toString('latin1')));
    s.once('close', () => {
      clearTimeout(timer);
      resolve({ text, closed: true });
    });
    s.once('error', () => {});
  });
}

describe('slow clients cannot hold sockets', () => {
  test('headers trickled slower than listen.headersTimeoutMs → 408 and the connection closed at that time', async () => {
    const gw = await gateway({ listen: { headersTimeoutMs: 500 } });
    const s = await rawSocket(gw.url);
    // The wait is bounded well below Node's own headers limit (60 s) and the whole request's (headers plus
    // listen.requestTimeoutMs, 30 s by default): a close within it can only be listen.headersTimeoutMs's.
    const ended = readUntilClosed(s, 20_000);
    // One header line every 200 ms: each byte arrives in time, the whole never does.
    s.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n`);
    let trickled = 0;
    const trickle = setInterval(() => {
      if (!s.writable) return;
      s.write('X-Slow: 1\r\n');
      trickled++;
    }, 200);
    const { text, closed } = await ended;
    clearInterval(trickle);
    assert.ok(closed, 'the gateway closed the connection');
    assert.match(text, /^HTTP\/1\.1 408 /);
    // Cut while its header lines were still arriving: the limit is on the whole headers, not on a pause.
    assert.ok(trickled >= 1, `cut after ${trickled} trickled header lines`);
    assert.equal(up.requests.length, 0);
    assert.equal(gw.gateway.edge.refusals.get('request_timeout'), 1);
  });

  test('an idle kept-alive connection is closed after listen.keepAliveTimeoutMs', async () => {
    const gw = await gateway({ listen: { keepAliveTimeoutMs: 1_000 } });
    const s = await rawSocket(gw.url);
    const ended = readUntilClosed(s, 10_000);
    s.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const { text, closed } = await ended;
    assert.match(text, /^HTTP\/1\.1 200 /);
    // The server tells the client the idle time it keeps the connection for (Node derives the header from the
    // same keepAliveTimeout that closes the socket; left at Node's default it would say 5) and then closes it.
    assert.match(text, /\r\nKeep-Alive: timeout=1\r\n/i, text);
    assert.ok(closed, 'the gateway closed the idle connection');
  });

  test('past listen.maxConnectionsPerIp an address gets 429 and a closed socket; other addresses are unaffected', async () => {
    const gw = await gateway({ listen: { maxConnectionsPerIp: 3 } });
    const held = await Promise.all([1, 2, 3].map(() => rawSocket(gw.url)));
    const extra = await rawSocket(gw.url);
    const refused = await readUntilClosed(extra, 5_000);
    assert.ok(refused.closed);
    assert.match(refused.text, /^HTTP\/1\.1 429 Too Many Requests\r\n/);
    // Another client address has its own allowance.
    const other = new Agent({ localAddress: '127.0.0.2' });
    const fromOther = await request(`${gw.origin}/healthz`, { dispatcher: other });
    assert.equal(fromOther.statusCode, 200);
    await fromOther.body.dump();
    await other.close();
    // A slot freed is a slot to use again.
    const closedOne = new Promise((r) => held[0]!.once('close', r));
    held[0]!.destroy();
    await closedOne;
    await new Promise((r) => setTimeout(r, 50));
    const again = await rawSocket(gw.url);
    const answered = readUntilClosed(again, 5_000);
    again.end('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    assert.match((await answered).text, /^HTTP\/1\.1 200 /);
    for (const s of held) s.destroy();
    assert.ok((gw.gateway.edge.refusals.get('connection_limit') ?? 0) >= 1);
  });

  test('a flood of refused connections is one warn line with their count, not a line per connection', { timeout: 40_000 }, async () => {
    const gw = await gateway({ listen: { maxConnectionsPerIp: 2 } });
    const held = await Promise.all([1, 2].map(() => rawSocket(gw.url)));
    const FLOOD = 25;
    const refused = await Promise.all(Array.from({ length: FLOOD }, async () => readUntilClosed(await rawSocket(gw.url), 5_000)));
    assert.ok(refused.every((r) => r.closed && /^HTTP\/1\.1 429 /.test(r.text)), 'every extra connection was refused');
    assert.equal(gw.gateway.edge.refusals.get('connection_limit'), FLOOD);
    // One line per reason: the two held sockets, which never send a request, may meet the headers timeout
    // meanwhile, and are told under request_timeout.
    const told = (): Array<Record<string, unknown>> => gw.logs.filter((l) => l.msg === 'connections refused before any request was read' && l.reason === 'connection_limit');
    // The line comes when its window (10 s) ends; bounded wait, well past it.
    await waitUntil(() => told().length > 0, 20_000);
    for (const s of held) s.destroy();
    assert.equal(told().length, 1, JSON.stringify(told()));
    assert.equal(told()[0]!.level, 'warn');
    assert.equal(told()[0]!.count, FLOOD, 'the line carries how many were refused');
  });
});

describe('ambiguous requests', () => {
  const cases: Array<[string, string]> = [
    ['Authorization', `Authorization: Bearer ${KEY}\r\nAuthorization: Bearer gh_other`],
    ['Host', 'Host: evil.example'],
    ['Mcp-Session-Id', 'Mcp-Session-Id: a\r\nmcp-session-id: b'],
    ['MCP-Protocol-Version', 'MCP-Protocol-Version: 2025-11-25\r\nMCP-Protocol-Version: 2025-06-18'],
    ['Mcp-Method', 'Mcp-Method: tools/list\r\nMcp-Method: tools/call'],
  ];
  for (const [name, lines] of cases) {
    test(`two ${name} headers → 400, nothing forwarded`, async () => {
      const gw = await gateway({ auth: { apiKeys: [{ id: 'k', hash: hashKey(KEY), scopes: [] }] } });
      const before = up.requests.length;
      const s = await rawSocket(gw.url);
      const answer = readUntilClosed(s, 5_000);
      const body = rpc(1, 'tools/list');
      const auth = name === 'Authorization' ? '' : `Authorization: Bearer ${KEY}\r\n`;
      s.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}${lines}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      const { text } = await answer;
      assert.match(text, /^HTTP\/1\.1 400 /);
      const json = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { error: { code: number; message: string } };
      assert.equal(json.error.code, -32600);
      assert.match(json.error.message, new RegExp(`the ${name.toLowerCase()} header must appear once`));
      assert.equal(up.requests.length, before);
    });
  }

  test('two Content-Length headers → 400 from the HTTP parser, nothing forwarded', async () => {
    const gw = await gateway({});
    const before = up.requests.length;
    const s = await rawSocket(gw.url);
    const answer = readUntilClosed(s, 5_000);
    const body = rpc(1, 'tools/list');
    s.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nContent-Length: ${body.length + 1}\r\n\r\n${body}`);
    assert.match((await answer).text, /^HTTP\/1\.1 400 /);
    assert.equal(up.requests.length, before);
  });
});

describe('odd but legal HTTP gets a documented answer (found by the edge fuzzer)', () => {
  const init = rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } });
  /** One raw request; the whole answer once the gateway closes the connection. */
  const raw = async (gw: TestGateway, head: string, body = ''): Promise<string> => {
    const s = await rawSocket(gw.url);
    const answer = readUntilClosed(s, 5_000);
    s.write(`${head}\r\n${body !== '' ? `content-length: ${Buffer.byteLength(body)}\r\n` : ''}connection: close\r\n\r\n${body}`);
    return (await answer).text;
  };
  const bodyOf = (text: string) => JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { error: { code: number; message: string } };
  /**
   * The call id an answer carries names its `request` line, with the status the client got, and its
   * `request refused` line (README §Logs). Answers made before any endpoint took the request carried a call
   * id no line named (found by the fuzzer's log property).
   */
  const assertLogged = async (gw: TestGateway, text: string, status: number, reason: string): Promise<void> => {
    const callId = /\r\nx-gatehouse-call-id: ([^\r]+)\r\n/i.exec(text)?.[1];
    assert.ok(callId !== undefined, text.slice(0, 300));
    await waitUntil(() => gw.logs.some((l) => l.msg === 'request' && l.callId === callId), 2_000);
    assert.deepEqual(gw.logs.filter((l) => l.msg === 'request' && l.callId === callId).map((l) => [l.status, l.outcome, l.refusal]), [[status, 'refused', reason]]);
    assert.ok(gw.logs.some((l) => l.msg === 'request refused' && l.callId === callId && l.reason === reason));
  };

  test('CONNECT → 405 with a JSON-RPC error body and Allow, not a dropped socket', async () => {
    const gw = await gateway({});
    const before = up.requests.length;
    const text = await raw(gw, `CONNECT /mcp HTTP/1.1\r\nHost: ${new URL(gw.url).host}`);
    assert.match(text, /^HTTP\/1\.1 405 /);
    assert.match(text, /\r\nallow: GET, POST, DELETE\r\n/i);
    assert.equal(bodyOf(text).error.code, -32600);
    assert.equal(gw.gateway.edge.refusals.get('method_not_allowed'), 1);
    assert.equal(up.requests.length, before);
  });

  test('an Expect other than 100-continue → 417 with a JSON-RPC error body; nothing forwarded', async () => {
    const gw = await gateway({});
    const before = up.requests.length;
    const text = await raw(gw, `POST /mcp HTTP/1.1\r\nHost: ${new URL(gw.url).host}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nexpect: something-else`, init);
    assert.match(text, /^HTTP\/1\.1 417 /);
    assert.equal(bodyOf(text).error.code, -32600);
    assert.match(bodyOf(text).error.message, /100-continue/);
    assert.equal(up.requests.length, before);
    await assertLogged(gw, text, 417, 'expectation_failed');
  });

  test('the absolute form of the request target is served (RFC 9112 §3.2.2); one naming another host is refused', async () => {
    const gw = await gateway({});
    const { host } = new URL(gw.url);
    const head = (target: string) => `POST ${target} HTTP/1.1\r\nHost: ${host}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream`;
    assert.match(await raw(gw, head(`http://${host}/mcp`), init), /^HTTP\/1\.1 200 /);
    const other = await raw(gw, head('http://evil.example/mcp'), init);
    assert.match(other, /^HTTP\/1\.1 400 /);
    assert.match(bodyOf(other).error.message, /names another host than the Host header/);
    await assertLogged(gw, other, 400, 'misdirected_request');
  });

  test('a request that arrives while Gatehouse drains → 503 GW_ERR_SHUTTING_DOWN, its call id in the log', async () => {
    const gw = await gateway({});
    gw.gateway.edge.startDraining();
    const text = await raw(gw, `POST /mcp HTTP/1.1\r\nHost: ${new URL(gw.url).host}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream`, init);
    assert.match(text, /^HTTP\/1\.1 503 /);
    assert.equal((bodyOf(text).error as { data?: { code?: string } }).data?.code, 'GW_ERR_SHUTTING_DOWN');
    await assertLogged(gw, text, 503, 'shutting_down');
  });
});

describe('failed authentication is limited per client address', () => {
  test('past auth.failureLimit an address gets 429 with Retry-After, even with a valid key; other addresses do not', async () => {
    // A day's window, not a minute's: windows are fixed on the store's clock, and a block ends with its window,
    // so a minute ending between the failure and the check let the blocked call through (seen in CI).
    const gw = await gateway({ auth: { apiKeys: [{ id: 'k', hash: hashKey(KEY), scopes: [] }], failureLimit: { attempts: 3, windowSeconds: 86_400 } } });
    const send = async (key: string, localAddress = '127.0.0.1') => {
      const dispatcher = new Agent({ localAddress });
      const res = await request(gw.url, { method: 'POST', dispatcher, headers: { ...LEGACY_HEADERS, authorization: `Bearer ${key}` }, body: rpc(1, 'ping') });
      const text = await res.body.text();
      await dispatcher.close();
      return { status: res.statusCode, retryAfter: res.headers['retry-after'], text };
    };
    // Within the limit a valid key is served; failures are answered 401 as usual.
    assert.equal((await send(KEY)).status, 200);
    for (let i = 0; i < 3; i++) assert.equal((await send(`gh_wrong_${i}`)).status, 401);
    const blocked = await send(KEY);
    assert.equal(blocked.status, 429, blocked.text);
    const wait = Number(blocked.retryAfter);
    assert.ok(wait >= 1 && wait <= 86_400, `Retry-After ${String(blocked.retryAfter)}`);
    assert.deepEqual(JSON.parse(blocked.text).error.data, { retryAfter: wait });
    assert.equal((await send('gh_wrong_again')).status, 429);
    // Another address is judged on its own.
    assert.equal((await send(KEY, '127.0.0.2')).status, 200);
    assert.equal(gw.gateway.edge.refusals.get('auth_failure_limit'), 2);
  });

  test('a blocked address is refused before its token is verified: no key-set fetch happens', async () => {
    const as = await startAuthServer();
    cleanups.push(() => as.close());
    as.published.push(await as.newKey('k1'));
    const publicUrl = 'http://127.0.0.1/mcp';
    const gw = await gateway({
      listen: { publicUrl, allowedHosts: ['127.0.0.1'] },
      // A day's window: windows are fixed (on the store's clock), and this test waits over a second between the
      // failures and the check, so with a minute's window it failed when a minute ended in between (seen in CI).
      auth: { oauth: { issuer: as.issuer, jwksUri: as.jwksUri, audience: publicUrl, jwksMinRefreshSeconds: 1 }, failureLimit: { attempts: 2, windowSeconds: 86_400 } },
    });
    const send = async (token: string) => {
      const res = await request(gw.url, { method: 'POST', headers: { ...LEGACY_HEADERS, authorization: `Bearer ${token}` }, body: rpc(1, 'ping') });
      await res.body.dump();
      return res.statusCode;
    };
    const foreign = await as.newKey('k-unknown');
    for (let i = 0; i < 2; i++) assert.equal(await send(await as.sign({ sub: 'mallory', aud: publicUrl }, { key: foreign })), 401);
    // Past jwksMinRefreshSeconds an unknown kid would make the verifier fetch the key set again; blocked,
    // nothing is verified at all.
    await new Promise((r) => setTimeout(r, 1_100));
    const fetches = as.hits.get('/jwks') ?? 0;
    assert.equal(await send(await as.sign({ sub: 'mallory', aud: publicUrl }, { key: foreign, kid: 'k-new' })), 429);
    assert.equal(await send(await as.sign({ sub: 'alice', aud: publicUrl })), 429);
    assert.equal(as.hits.get('/jwks') ?? 0, fetches);
  });

  test('behind a trusted proxy each X-Forwarded-For client is counted on its own; an untrusted peer cannot pick its address', async () => {
    // A day's window, not a minute's: windows are fixed on the store's clock, and a block ends with its window,
    // so a minute ending between the failure and the check let the blocked call through (seen in CI).
    const gw = await gateway({ listen: { trustedProxies: ['127.0.0.1/32'] }, auth: { apiKeys: [{ id: 'k', hash: hashKey(KEY), scopes: [] }], failureLimit: { attempts: 1, windowSeconds: 86_400 } } });
    const send = async (key: string, forwardedFor: string, localAddress = '127.0.0.1') => {
      const dispatcher = new Agent({ localAddress });
      const res = await request(gw.url, { method: 'POST', dispatcher, headers: { ...LEGACY_HEADERS, authorization: `Bearer ${key}`, 'x-forwarded-for': forwardedFor }, body: rpc(1, 'ping') });
      await res.body.dump();
      await dispatcher.close();
      return res.statusCode;
    };
    assert.equal(await send('gh_bad', '203.0.113.7'), 401);
    assert.equal(await send(KEY, '203.0.113.7'), 429, 'the failing client is blocked');
    assert.equal(await send(KEY, '198.51.100.9'), 200, 'another client behind the same proxy is not');
    // A proxy chain: the nearest untrusted hop is the client.
    assert.equal(await send(KEY, '203.0.113.7, 127.0.0.1'), 429);
    // 127.0.0.3 is not a trusted proxy: its X-Forwarded-For is ignored and it is judged as itself.
    assert.equal(await send('gh_bad', '198.51.100.9', '127.0.0.3'), 401);
    assert.equal(await send(KEY, '198.51.100.9', '127.0.0.3'), 429);
    assert.equal(await send(KEY, '198.51.100.9'), 200, 'the address it claimed was not blocked');
  });

  test('behind a trusted proxy a hop written with a port is that client, not the proxy', async () => {
    // Proxies that write the client's port too (203.0.113.5:4711, [2001:db8::1]:443) once made every client
    // behind them count as the proxy: one client's guesses blocked them all.
    const gw = await gateway({ listen: { trustedProxies: ['127.0.0.1/32'] }, auth: { apiKeys: [{ id: 'k', hash: hashKey(KEY), scopes: [] }], failureLimit: { attempts: 1, windowSeconds: 86_400 } } });
    const send = async (key: string, forwardedFor: string) => {
      const res = await request(gw.url, { method: 'POST', headers: { ...LEGACY_HEADERS, authorization: `Bearer ${key}`, 'x-forwarded-for': forwardedFor }, body: rpc(1, 'ping') });
      await res.body.dump();
      return res.statusCode;
    };
    assert.equal(await send('gh_bad', '203.0.113.5:4711'), 401);
    assert.equal(await send(KEY, '203.0.113.5:5000'), 429, 'the same client from another port is blocked');
    assert.equal(await send(KEY, '198.51.100.9:4711'), 200, 'another client behind the proxy is not');
    assert.equal(await send('gh_bad', '[2001:db8::1]:443'), 401);
    assert.equal(await send(KEY, '2001:db8::2'), 429, 'the IPv6 client is counted by its /64');
    assert.equal(await send(KEY, '[2001:db8:1::1]:443'), 200, 'another /64 is not');
  });
});

describe('DNS rebinding and /readyz', () => {
  // 2026-07-28/basic/transports/streamable-http.mdx §Security Warning: a page that rebound its own name to a
  // loopback Gatehouse sends Host: evil.example. /readyz names the upstreams and the store, so it is guarded
  // like the MCP endpoint; the kubelet's probes reach a non-loopback listener, where any Host passes.
  test('on a loopback listener, /readyz answers a foreign Host with 403 and a loopback one as before', async () => {
    const gw = await gateway({});
    const foreign = await request(`${gw.origin}/readyz`, { headers: { host: 'evil.example' } });
    assert.equal(foreign.statusCode, 403);
    const body = await foreign.body.text();
    assert.doesNotMatch(body, /"up"/, 'no upstream name in the refusal');
    const local = await request(`${gw.origin}/readyz`);
    assert.ok(local.statusCode === 200 || local.statusCode === 503);
    assert.match(await local.body.text(), /"upstreams"/);
  });
});
