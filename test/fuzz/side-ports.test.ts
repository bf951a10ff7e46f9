// The gateway's other doors, fuzzed: the admin API (approvals, pins, the inbox's login) and the egress
// proxy (which whoever reaches its loopback port may use, an upstream's own code among them). Generated
// requests over raw HTTP (fast-check, a fixed seed), against one `gatehouse serve` process. Properties:
// every request gets a status line with a status that door documents, the process stays up, and it never
// logs a failure of its own (the catch-alls' `admin request failed` and `egress proxy … failed`: a broken
// percent-encoding once reached the first as a 503, and took the whole process down through the second).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { serveCli, type ServingCli } from '../helpers/cli.js';
import { modernRequest, post } from '../helpers/http.js';
import { rawRequest } from './raw-http.js';

const FETCHER = fileURLToPath(new URL('../fixtures/upstreams/fetcher-stdio.mjs', import.meta.url));
const ADMIN_TOKEN = 'side-ports-admin-token-0123456789';
const RUNS = Number(process.env.FUZZ_SIDE_RUNS ?? 1_000);
const SEED = Number(process.env.FUZZ_SEED ?? 20261203);

/** What each door answers with (README §Admin API, docs/security.md §egress proxy). */
const ADMIN_STATUSES = new Set([200, 303, 400, 401, 403, 404, 405, 409, 413, 431]);
const PROXY_STATUSES = new Set([200, 400, 403, 407, 413, 431, 502]);

let target: Server;
let gw: ServingCli;
let adminPort: number;
let proxyPort: number;
let proxyCredentials: string;

before(async () => {
  target = createServer((_req, res) => res.end('target'));
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  const targetPort = (target.address() as AddressInfo).port;
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-side-ports-'));
  const config = join(dir, 'gatehouse.yaml');
  writeFileSync(
    config,
    JSON.stringify({
      listen: { host: '127.0.0.1', port: 0 },
      // The failed-auth limit off: the generated guesses would otherwise have every later request answered 429
      // (its own test: test/integration/admin-auth-limit.test.ts), and the property would read only that.
      auth: { anonymous: true, failureLimit: { attempts: 0 } },
      upstreams: [{ name: 'fetcher', command: ['node', FETCHER], env: { TARGET_ALLOWED: `http://127.0.0.1:${targetPort}/` } }],
      store: { kind: 'sqlite', path: join(dir, 'gatehouse.db') },
      tools: { pinning: 'enforce' },
      admin: { enabled: true, port: 0, token: ADMIN_TOKEN },
      policy: {
        egress: [{ id: 'fetcher-net', tools: ['fetcher/*'], allow: { cidrs: ['127.0.0.1/32'], ports: [targetPort] } }],
        egressProxy: { enabled: true, port: 0 },
      },
    }),
  );
  gw = await serveCli(['--config', config], { configStore: true });
  const logged = (msg: string): number => Number(new URL(new RegExp(`"msg":"${msg}","url":"([^"]+)"`).exec(gw.stderr())![1]!).port);
  adminPort = logged('admin API listening');
  proxyPort = logged('egress proxy listening');
  // The stdio child's own proxy credentials, as it got them (HTTP_PROXY's user and password).
  const req = modernRequest(1, 'tools/call', { name: 'proxy_env', arguments: {} });
  const env = JSON.parse((await post(gw.url, req.body, req.headers)).json().result.content[0].text) as { HTTP_PROXY: string };
  const proxy = new URL(env.HTTP_PROXY);
  proxyCredentials = Buffer.from(`${proxy.username}:${decodeURIComponent(proxy.password)}`).toString('base64');
});

after(async () => {
  await gw?.stop();
  target?.close();
});

/** Path pieces that have broken things: percent-encoding that does not decode, dots, NULs, long runs. */
const segment = fc.oneof(
  fc.constantFrom('fetcher%2Ffetch_named', 'fetcher/fetch_named', '%E0%A4%A', '%', '%zz', '..', '%00', 'a'.repeat(300), '__proto__', 'constructor', ''),
  fc.stringMatching(/^[A-Za-z0-9%._~-]{0,20}$/),
);
const hex24 = fc.stringMatching(/^[0-9a-f]{24}$/);
const adminPath = fc.oneof(
  fc.constantFrom('/', '/approvals', '/approvals?state=pending', '/approvals?state=%zz', '/pins', '/login', '/logout', '/inbox.js', '/inbox.css', '/healthz', '//x', '/approvals/ap_'),
  hex24.map((h) => `/approvals/ap_${h}`),
  fc.tuple(hex24, fc.constantFrom('approve', 'reject', 'nope')).map(([h, a]) => `/approvals/ap_${h}/${a}`),
  segment.map((s) => `/pins/${s}/accept`),
  segment.map((s) => `/${s}`),
);
const jsonBody = fc.oneof(
  fc.constant(''),
  fc.json({ maxDepth: 3 }),
  fc.constantFrom('{"reason":"ok"}', '{"reason":{"toString":1}}', '{"previewSha256":"zz"}', '{"digest":5}', '{"__proto__":{"admin":true}}', '[1]', 'null', '{', 'token=x'),
);
const adminRequest = fc.record({
  method: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'),
  path: adminPath,
  // Mostly the reviewer's token: most of the API is behind it.
  auth: fc.oneof({ weight: 4, arbitrary: fc.constant('token') }, { weight: 1, arbitrary: fc.constantFrom('none', 'wrong', 'basic', 'cookie') }),
  contentType: fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'none'),
  csrf: fc.boolean(),
  body: jsonBody,
});

const proxyTarget = fc.oneof(
  fc.constantFrom('http://127.0.0.1:1/', 'http://169.254.169.254/latest', 'http://localhost/', 'http://[::1]/', 'http://%zz/', 'ftp://127.0.0.1/', 'http://a@b@127.0.0.1/', 'http://0x7f.1/', 'http:///', 'garbage', '/relative', '*'),
  fc.webUrl(),
);
const proxyRequest = fc.record({
  method: fc.constantFrom('GET', 'POST', 'CONNECT', 'DELETE'),
  target: proxyTarget,
  connectTarget: fc.constantFrom('127.0.0.1:1', '169.254.169.254:80', 'localhost:443', '[::1]:22', 'nohost', ':80', '127.0.0.1:99999', 'example.com:443'),
  auth: fc.oneof(
    fc.constantFrom('none', 'valid', 'Basic', 'Bearer x', 'Basic !!!'),
    fc.uint8Array({ maxLength: 40 }).map((b) => `Basic ${Buffer.from(b).toString('base64')}`),
    fc.constantFrom('fetch%E0%A4%A:x', '%:%', ':', 'fetcher', 'fetcher:', '__proto__:x').map((s) => `Basic ${Buffer.from(s).toString('base64')}`),
  ),
});

function bytesOf(lines: string[], body = ''): Buffer {
  return Buffer.from(`${lines.join('\r\n')}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}

async function send(port: number, bytes: Buffer): Promise<number | string> {
  const outcome = await rawRequest({ port, bytes, headersDeadlineMs: 5_000, streamReadMs: 200, bodyDeadlineMs: 2_000, head: bytes.subarray(0, 5).toString() === 'HEAD ' });
  return outcome.kind === 'response' ? outcome.response.status : `${outcome.kind}${'error' in outcome && outcome.error ? ` (${outcome.error})` : ''}`;
}

/** The door's own failures logged so far: each is a defect the property names. */
function ownFailures(): string[] {
  return gw.stderr().split('\n').filter((l) => /"level":"error".*"msg":"(admin request failed|egress proxy (request|tunnel) failed)"/.test(l) || /unhandled|uncaught/i.test(l));
}

test(`the admin API answers ${RUNS} generated requests with its documented statuses (seed ${SEED})`, { timeout: 120_000 }, async () => {
  await fc.assert(
    fc.asyncProperty(adminRequest, async (r) => {
      const lines = [`${r.method} ${r.path} HTTP/1.1`, `host: 127.0.0.1:${adminPort}`];
      if (r.auth === 'token') lines.push(`authorization: Bearer ${ADMIN_TOKEN}`);
      if (r.auth === 'wrong') lines.push('authorization: Bearer not-the-token-0123456789');
      if (r.auth === 'basic') lines.push('authorization: Basic YTpi');
      if (r.auth === 'cookie') lines.push('cookie: gatehouse_admin=garbage%zz');
      if (r.contentType !== 'none') lines.push(`content-type: ${r.contentType}`);
      if (r.csrf) lines.push('x-csrf-token: x');
      const status = await send(adminPort, bytesOf(lines, r.method === 'GET' || r.method === 'HEAD' ? '' : r.body));
      assert.ok(typeof status === 'number' && ADMIN_STATUSES.has(status), `${r.method} ${r.path} (${r.auth}): ${status}`);
      assert.equal(gw.child.exitCode, null, 'the process is up');
      assert.deepEqual(ownFailures(), []);
    }),
    { numRuns: RUNS, seed: SEED, endOnFailure: true },
  );
});

test(`the egress proxy answers ${RUNS} generated requests and tunnels with its documented statuses (seed ${SEED})`, { timeout: 120_000 }, async () => {
  await fc.assert(
    fc.asyncProperty(proxyRequest, async (r) => {
      const connect = r.method === 'CONNECT';
      const lines = [`${r.method} ${connect ? r.connectTarget : r.target} HTTP/1.1`, `host: ${connect ? r.connectTarget : '127.0.0.1'}`];
      if (r.auth === 'valid') lines.push(`proxy-authorization: Basic ${proxyCredentials}`);
      else if (r.auth !== 'none') lines.push(`proxy-authorization: ${r.auth}`);
      const status = await send(proxyPort, bytesOf(lines));
      assert.ok(typeof status === 'number' && PROXY_STATUSES.has(status), `${lines[0]} (${r.auth}): ${status}`);
      assert.equal(gw.child.exitCode, null, 'the process is up');
      assert.deepEqual(ownFailures(), []);
    }),
    { numRuns: RUNS, seed: SEED, endOnFailure: true },
  );
});
