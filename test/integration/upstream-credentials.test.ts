// Each HTTP upstream authenticates with Gatehouse's own credentials, never the client's: here the OAuth
// client-credentials grant against a real token endpoint served by the test (fetched once, shared, renewed
// before expiry, dropped on a 401, failing closed when the endpoint is down), and static headers from
// `${env:}` for comparison. Spec: 2026-07-28 security best practices §Token Passthrough; RFC 6749 §2.3.1,
// §4.4, §5.1; RFC 8707 §2.
// Static configured headers are also covered by passthrough-failures.test.ts ("client Authorization and
// Cookie never reach the upstream") and their interpolation by test/unit/config/interpolate.test.ts; the
// test here only adds the path from `${env:}` in a YAML file to the wire.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { Pool } from 'undici';
import { parseConfigText, validateConfigObject } from '../../src/config/load.js';
import type { HttpUpstreamConfig } from '../../src/config/types.js';
import { createGateway } from '../../src/gateway.js';
import { createLogger } from '../../src/log/logger.js';
import { upstreamCredentials } from '../../src/upstream/credentials.js';
import { MessageClient } from '../../src/upstream/message-client.js';
import { fixedLimits } from '../../src/upstream/http-tunables.js';
import { startFakeUpstream, jsonResult, sleep, type FakeHandler, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, modernRequest, post, rpc } from '../helpers/http.js';

const CLIENT_ID = 'gatehouse:gw';
// Characters that RFC 6749 §2.3.1 form-encoding changes before HTTP Basic: a naive join would break.
const CLIENT_SECRET = 'gw s3cret+/=&:%';
const CLIENT_KEY = 'client-secret-token';
const CLIENT_AUTH = `Bearer ${CLIENT_KEY}`;
/** The client's credential is a real gateway API key: accepted at the edge, and still not forwarded. */
const AUTH = { anonymous: false, apiKeys: [{ id: 'client', hash: `sha256:${createHash('sha256').update(CLIENT_KEY).digest('hex')}`, scopes: [] }] };

const cleanups: Array<() => Promise<void>> = [];
const gateways: TestGateway[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

interface TokenRequest {
  form: URLSearchParams;
  contentType?: string;
  /** Client id and secret from HTTP Basic, form-decoded; undefined when the header is missing or not Basic. */
  basic?: [string, string];
}

/** An OAuth token endpoint for the client-credentials grant; options may change between calls. */
interface TokenEndpoint {
  url: string;
  requests: TokenRequest[];
  /** Tokens sent out so far: tok-1, tok-2, … */
  issued: number;
  expiresIn: number;
  delayMs: number;
  close(): Promise<void>;
}

function formDecode(s: string): string {
  return decodeURIComponent(s.replace(/\+/g, ' '));
}

function basicOf(req: IncomingMessage): [string, string] | undefined {
  const m = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
  if (!m) return undefined;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : [formDecode(decoded.slice(0, colon)), formDecode(decoded.slice(colon + 1))];
}

async function startTokenEndpoint(expiresIn = 3600, port = 0): Promise<TokenEndpoint> {
  const endpoint: TokenEndpoint = { url: '', requests: [], issued: 0, expiresIn, delayMs: 0, close: async () => {} };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      const basic = basicOf(req);
      endpoint.requests.push({ form, contentType: req.headers['content-type'], basic });
      const answer = (status: number, body: Record<string, unknown>): void => {
        res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body));
      };
      if (req.method !== 'POST' || req.headers['content-type'] !== 'application/x-www-form-urlencoded') return answer(400, { error: 'invalid_request' });
      if (basic?.[0] !== CLIENT_ID || basic[1] !== CLIENT_SECRET) return answer(401, { error: 'invalid_client', error_description: `bad secret ${basic?.[1] ?? ''}` });
      if (form.get('grant_type') !== 'client_credentials') return answer(400, { error: 'unsupported_grant_type' });
      // Lower-case "bearer": token_type is case-insensitive (RFC 6749 §5.1).
      setTimeout(() => answer(200, { access_token: `tok-${++endpoint.issued}`, token_type: 'bearer', expires_in: endpoint.expiresIn }), endpoint.delayMs);
    });
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  endpoint.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/oauth/token`;
  endpoint.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  cleanups.push(() => endpoint.close());
  return endpoint;
}

/** A fake upstream that also records the Authorization header of every request, the era probe's included. */
async function recordingUpstream(handler: FakeHandler = (_req, res, body) => jsonResult(res, body, { tools: [] }), handshake?: 'modern'): Promise<FakeUpstream & { auth: Array<string | undefined> }> {
  const up = await startFakeUpstream(handler, handshake ? { handshake } : {});
  const auth: Array<string | undefined> = [];
  up.server.on('request', (req: IncomingMessage) => auth.push(req.headers.authorization));
  cleanups.push(() => up.close());
  return Object.assign(up, { auth });
}

async function gatewayWithGrant(upstreamUrl: string, tokenUrl: string, extra: { era?: string; scopes?: string[]; resource?: string; refreshBeforeSeconds?: number; clientSecret?: string } = {}): Promise<TestGateway> {
  const { era = 'auto', clientSecret = CLIENT_SECRET, ...grant } = extra;
  const gw = await startGateway({ auth: AUTH, upstreams: [{ name: 'up', url: upstreamUrl, era, clientCredentials: { tokenUrl, clientId: CLIENT_ID, clientSecret, ...grant } }] });
  cleanups.push(() => gw.close());
  gateways.push(gw);
  return gw;
}

// Client ids are "c-…": the gateway also talks to the upstream on its own (era probe, listing for the
// catalog decision), and those requests are told apart by their ids.
const legacyCall = (url: string, id: number | string = 1) => post(url, rpc(`c-${id}`, 'tools/list'), { ...LEGACY_HEADERS, authorization: CLIENT_AUTH });
const modernCall = (url: string, id: number | string = 1) => {
  const { body, headers } = modernRequest(`c-${id}`, 'tools/list');
  return post(url, body, { ...headers, authorization: CLIENT_AUTH });
};

/** The Authorization header of each request the upstream got on behalf of a client, in order. */
function clientAuth(up: FakeUpstream): Array<string | undefined> {
  return up.requests.filter((r) => /^\{"jsonrpc":"2.0","id":"c-/.test(r.body)).map((r) => r.headers.authorization);
}

async function waitFor(what: string, cond: () => boolean, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) assert.fail(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(20);
  }
}

describe('client-credentials grant: the upstream sees the gateway token, never the client one', () => {
  test('legacy pass-through (and the era probe before it) carries only the gateway token', async () => {
    const tokens = await startTokenEndpoint();
    const up = await recordingUpstream();
    const gw = await gatewayWithGrant(up.url, tokens.url);
    const res = await legacyCall(gw.url);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(clientAuth(up), ['Bearer tok-1']);
    // The probe (discover, initialize, DELETE of its session) goes through the message client: same token.
    assert.ok(up.auth.length >= 4, `probe and call recorded (${up.auth.length})`);
    assert.deepEqual(new Set(up.auth), new Set(['Bearer tok-1']));
  });

  test('modern pass-through carries only the gateway token', async () => {
    const tokens = await startTokenEndpoint();
    const up = await recordingUpstream(undefined, 'modern');
    const gw = await gatewayWithGrant(up.url, tokens.url, { era: 'modern' });
    const res = await modernCall(gw.url);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(clientAuth(up), ['Bearer tok-1']);
    assert.deepEqual(new Set(up.auth), new Set(['Bearer tok-1']));
  });

  test('the token endpoint gets grant_type, HTTP Basic client auth, the scopes space-joined and the resource', async () => {
    const tokens = await startTokenEndpoint();
    const up = await recordingUpstream();
    const gw = await gatewayWithGrant(up.url, tokens.url, { era: 'legacy', scopes: ['mcp:read', 'mcp:write'], resource: up.url });
    assert.equal((await legacyCall(gw.url)).status, 200);
    assert.equal(tokens.requests.length, 1);
    const [sent] = tokens.requests;
    assert.equal(sent!.contentType, 'application/x-www-form-urlencoded');
    assert.deepEqual(sent!.basic, [CLIENT_ID, CLIENT_SECRET]);
    assert.equal(sent!.form.get('grant_type'), 'client_credentials');
    assert.equal(sent!.form.get('scope'), 'mcp:read mcp:write');
    assert.equal(sent!.form.get('resource'), up.url);
    // The secret travels in the Authorization header only, not in the body as well (RFC 6749 §2.3.1).
    assert.equal(sent!.form.get('client_secret'), null);
  });

  test('without resource configured, the upstream\'s own URL is the resource (authorization §Resource Parameter Implementation: always, MUST); without scopes, no scope', async () => {
    const tokens = await startTokenEndpoint();
    const up = await recordingUpstream();
    const gw = await gatewayWithGrant(up.url, tokens.url, { era: 'legacy' });
    assert.equal((await legacyCall(gw.url)).status, 200);
    assert.deepEqual([...tokens.requests[0]!.form.keys()], ['grant_type', 'resource']);
    assert.equal(tokens.requests[0]!.form.get('resource'), up.url);
  });

  test('an empty resource sends none, for an authorization server that refuses resource indicators', async () => {
    const tokens = await startTokenEndpoint();
    const up = await recordingUpstream();
    const gw = await gatewayWithGrant(up.url, tokens.url, { era: 'legacy', resource: '' });
    assert.equal((await legacyCall(gw.url)).status, 200);
    assert.deepEqual([...tokens.requests[0]!.form.keys()], ['grant_type']);
  });
});

describe('token cache', () => {
  test('one token fetch serves many calls, concurrent first calls included', async () => {
    const tokens = await startTokenEndpoint();
    tokens.delayMs = 100; // the first calls all arrive while the fetch is in flight
    const up = await recordingUpstream();
    const gw = await gatewayWithGrant(up.url, tokens.url);
    const first = await Promise.all(Array.from({ length: 10 }, (_, i) => legacyCall(gw.url, i)));
    assert.deepEqual(first.map((r) => r.status), Array(10).fill(200));
    for (let i = 0; i < 10; i++) assert.equal((await legacyCall(gw.url, `s${i}`)).status, 200);
    assert.equal(tokens.requests.length, 1);
    assert.equal(clientAuth(up).length, 20);
    assert.deepEqual(new Set(up.auth), new Set(['Bearer tok-1']));
  });

  test('the token is renewed refreshBeforeSeconds before it expires, in the background', async () => {
    const tokens = await startTokenEndpoint(5);
    const up = await recordingUpstream();
    const gw = await gatewayWithGrant(up.url, tokens.url, { era: 'legacy', refreshBeforeSeconds: 2 }); // renew at 3 s of 5
    const started = Date.now();
    assert.equal((await legacyCall(gw.url, 1)).status, 200);
    await sleep(1000);
    assert.equal((await legacyCall(gw.url, 2)).status, 200);
    assert.equal(tokens.requests.length, 1, 'not renewed before the renewal point');

    await sleep(Math.max(0, 3200 - (Date.now() - started)));
    tokens.delayMs = 300; // a slow renewal: calls meanwhile must not wait for it
    const during = await Promise.all([3, 4, 5].map((id) => legacyCall(gw.url, id)));
    assert.deepEqual(during.map((r) => r.status), [200, 200, 200]);
    assert.deepEqual(clientAuth(up).slice(2), ['Bearer tok-1', 'Bearer tok-1', 'Bearer tok-1'], 'the still-valid token is used while the new one is fetched');
    await waitFor('the renewed token', () => tokens.issued === 2);
    await sleep(50); // the answer reaches the gateway
    assert.equal((await legacyCall(gw.url, 6)).status, 200);
    assert.equal(clientAuth(up).at(-1), 'Bearer tok-2');
    assert.equal(tokens.requests.length, 2, 'calls in the renewal window share one renewal');
  });

  test('an upstream 401 drops the token: the next call fetches one new token, the refused call is not replayed', async () => {
    const tokens = await startTokenEndpoint();
    // The token is refused as if revoked early, the first time a client call carries it.
    const up = await recordingUpstream((_req, res, body) => {
      if (body.includes('"id":"c-1"')) res.writeHead(401, { 'www-authenticate': 'Bearer error="invalid_token"' }).end();
      else jsonResult(res, body, { tools: [] });
    });
    const gw = await gatewayWithGrant(up.url, tokens.url, { era: 'legacy' });
    const refused = await legacyCall(gw.url, 1);
    assert.equal(refused.status, 502);
    assert.equal(refused.json().error.data.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE');
    assert.equal(refused.headers['www-authenticate'], undefined);
    assert.deepEqual(clientAuth(up), ['Bearer tok-1'], 'the refused request is not retried');
    assert.equal(tokens.requests.length, 1);

    assert.equal((await legacyCall(gw.url, 2)).status, 200);
    assert.equal((await legacyCall(gw.url, 3)).status, 200);
    assert.deepEqual(clientAuth(up), ['Bearer tok-1', 'Bearer tok-2', 'Bearer tok-2']);
    assert.equal(tokens.requests.length, 2, 'exactly one new token after the 401');
  });
});

describe('fail closed: no token, no upstream request', () => {
  test('token endpoint down → a clear 502 for legacy and modern clients, and nothing reaches the upstream', async () => {
    const down = 'http://127.0.0.1:1/oauth/token';
    const legacyUp = await recordingUpstream();
    const modernUp = await recordingUpstream(undefined, 'modern');
    const legacyGw = await gatewayWithGrant(legacyUp.url, down); // era auto: the probe needs the token too
    const modernGw = await gatewayWithGrant(modernUp.url, down, { era: 'modern' });
    for (const res of [await legacyCall(legacyGw.url, 7), await modernCall(modernGw.url, 7)]) {
      assert.equal(res.status, 502, res.text);
      const body = res.json();
      assert.equal(body.id, 'c-7');
      assert.equal(body.error.data.code, 'GW_ERR_UPSTREAM_UNREACHABLE');
      assert.equal(body.error.data.upstream, 'up');
      assert.match(body.error.message, /^Upstream "up" was not called: Gatehouse could not get its access token \(token endpoint unreachable: ECONNREFUSED\)$/);
    }
    const readyz = await fetch(`${legacyGw.origin}/readyz`);
    assert.equal(readyz.status, 503, 'not ready without a token');
    assert.deepEqual(legacyUp.auth, [], 'the legacy upstream received nothing');
    assert.deepEqual(modernUp.auth, [], 'the modern upstream received nothing');
  });

  test('token endpoint refusing the client → 502 GW_ERR_UPSTREAM_BAD_RESPONSE, nothing reaches the upstream', async () => {
    const tokens = await startTokenEndpoint();
    const up = await recordingUpstream();
    const gw = await gatewayWithGrant(up.url, tokens.url, { era: 'legacy', clientSecret: 'wrong-secret' });
    const res = await legacyCall(gw.url);
    assert.equal(res.status, 502);
    assert.equal(res.json().error.data.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE');
    assert.match(res.json().error.message, /token endpoint answered HTTP 401 invalid_client/);
    assert.doesNotMatch(res.text, /wrong-secret/, 'the error description of the token endpoint is not relayed');
    assert.deepEqual(up.auth, []);
  });

  test('the endpoint comes back: the next call gets a token and goes through', async () => {
    // A port taken and freed again: down first, then back on the same address.
    const gone = await startTokenEndpoint();
    const url = gone.url;
    await gone.close();
    const up = await recordingUpstream();
    const gw = await gatewayWithGrant(up.url, url, { era: 'legacy' });
    assert.equal((await legacyCall(gw.url, 1)).status, 502);
    assert.deepEqual(up.auth, []);
    const back = await startTokenEndpoint(3600, Number(new URL(url).port));
    await sleep(1100); // past the short hold-off after a failure
    assert.equal((await legacyCall(gw.url, 2)).status, 200);
    assert.equal(back.requests.length, 1);
    assert.deepEqual(clientAuth(up), ['Bearer tok-1']);
    assert.deepEqual(new Set(up.auth), new Set(['Bearer tok-1']));
  });
});

describe('message client (bridges, probes): credentials on POST, GET streams and DELETE', () => {
  test('every method carries the token; a 401 makes the next request use a new one', async () => {
    const tokens = await startTokenEndpoint();
    let refuse = false;
    const up = await recordingUpstream(
      (req, res, body) => {
        if (refuse) {
          refuse = false;
          res.writeHead(401).end();
          return;
        }
        if (req.method === 'GET') res.writeHead(200, { 'content-type': 'text/event-stream' }).end('data: {"jsonrpc":"2.0","method":"notifications/x"}\n\n');
        else if (req.method === 'DELETE') res.writeHead(200).end();
        else jsonResult(res, body, {});
      },
    );
    const config = validateConfigObject({ upstreams: [{ name: 'up', url: up.url, clientCredentials: { tokenUrl: tokens.url, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET } }] }).upstreams[0] as HttpUpstreamConfig;
    const credentials = upstreamCredentials(config, createLogger('error', () => {}));
    const pool = new Pool(new URL(up.url).origin);
    cleanups.push(async () => {
      credentials.close();
      await pool.close();
    });
    const client = new MessageClient(fixedLimits(pool), '/mcp', credentials, 'up');
    await client.post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { authorization: CLIENT_AUTH });
    const stream = await client.openGet({}, AbortSignal.timeout(2000));
    assert.ok(stream);
    for await (const m of stream) void m;
    await client.deleteSession('s-1', '2025-11-25');
    assert.deepEqual(up.requests.map((r) => [r.method, r.headers.authorization]), [
      ['POST', 'Bearer tok-1'],
      ['GET', 'Bearer tok-1'],
      ['DELETE', 'Bearer tok-1'],
    ]);
    refuse = true;
    const refused = await client.post({ jsonrpc: '2.0', id: 2, method: 'ping' }, {});
    assert.equal(refused.status, 401);
    await client.post({ jsonrpc: '2.0', id: 3, method: 'ping' }, {});
    assert.equal(up.requests.at(-1)!.headers.authorization, 'Bearer tok-2');
    assert.equal(tokens.requests.length, 2);
  });
});

describe('static headers', () => {
  test('headers: { Authorization: "Bearer ${env:X}" } from a config file reach the upstream in place of the client one', async () => {
    const up = await recordingUpstream();
    const yaml = ['listen: { host: 127.0.0.1, port: 0 }', `auth: ${JSON.stringify(AUTH)}`, 'upstreams:', `  - name: up`, `    url: "${up.url}"`, '    headers: { Authorization: "Bearer ${env:UP_TOKEN}" }', ''].join('\n');
    const config = parseConfigText(yaml, { fileName: 'gatehouse.yaml', baseDir: tmpdir(), env: { UP_TOKEN: 'static-upstream-token' } });
    const gateway = createGateway(config, createLogger('error', () => {}));
    const url = await gateway.listen();
    cleanups.push(() => gateway.close());
    assert.equal((await legacyCall(url)).status, 200);
    assert.deepEqual(clientAuth(up), ['Bearer static-upstream-token']);
    assert.deepEqual(new Set(up.auth), new Set(['Bearer static-upstream-token']), 'probe included');
  });
});

describe('logs', () => {
  test('no log line carries the client secret or an access token', () => {
    assert.ok(gateways.length > 0);
    for (const gw of gateways) {
      const text = JSON.stringify(gw.logs);
      assert.ok(!text.includes(CLIENT_SECRET), 'secret logged');
      assert.doesNotMatch(text, /Basic /, 'client authentication logged');
      assert.doesNotMatch(text, /tok-\d/, 'token logged');
      assert.doesNotMatch(text, /client-secret-token/, 'client token logged');
    }
    // The failures themselves are logged, with what went wrong.
    assert.ok(gateways.some((gw) => gw.logs.some((l) => l.msg === 'could not get an access token for the upstream')));
  });
});
