// Interop with a client Gatehouse's authors did not write: the official Python MCP SDK (PyPI `mcp`, 2.3.0,
// installed by .ci/run) drives the built CLI through test/interop/python_client.py, in front of
// `@modelcontextprotocol/server-everything` (a 2025-11-25 era server) over stdio and over Streamable HTTP.
//
// SDK 2.x speaks both eras and can be pinned to either (`mcp.Client(mode=...)`), so every upstream is
// exercised three ways:
//   - `legacy`: the `initialize` handshake and an `MCP-Session-Id` session
//     (2025-11-25/basic/transports.mdx §Session Management, §Protocol Version Header);
//   - `2026-07-28`: pinned modern, stateless POSTs each carrying `MCP-Protocol-Version`
//     (2026-07-28/basic/transports/streamable-http.mdx §Sending Messages, §Protocol Version Header);
//   - `auto` (the SDK default): a `server/discover` probe first, falling back to `initialize` only when the
//     server is not positively modern (2026-07-28/basic/transports/streamable-http.mdx §Backward
//     Compatibility). Gatehouse answers `server/discover` itself, so this must settle on 2026-07-28.
// The modern runs go through Gatehouse's era bridge (modern client → legacy server); the legacy runs are
// same-era pass-through.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashKey } from '../../src/auth/key-hash.js';
import { ROOT, serveCli, type ServingCli } from '../helpers/cli.js';
import { startEverythingHttp, type EverythingHttp } from '../fixtures/upstreams/everything-http.js';

const SDK_VERSION = '2.3.0';
const CLIENT_SCRIPT = join(ROOT, 'test/interop/python_client.py');
const EVERYTHING_ENTRY = 'node_modules/@modelcontextprotocol/server-everything/dist/index.js';
/** Per-run budget handed to the script (overall deadline and per-request read timeout), in seconds. */
const CLIENT_TIMEOUT_S = 20;
/** Hard limit on one Python process, past which it is killed by PID. */
const PROCESS_TIMEOUT_MS = 30_000;

const MODES = ['legacy', '2026-07-28', 'auto'] as const;
type Mode = (typeof MODES)[number];

/** The JSON line test/interop/python_client.py prints. */
interface HttpExchange {
  http: string;
  rpc: string | null;
  sentProtocolVersion: string | null;
  sentSessionId: boolean;
  status: number;
  contentType: string | null;
  gotSessionId: boolean;
}
interface PyReport {
  ok: boolean;
  sdk: string;
  mode: Mode;
  protocolVersion: string;
  era: 'legacy' | 'modern';
  serverInfo: { name: string; version: string } | null;
  tools: string[];
  echo: { isError: boolean; text: string | null };
  resources: string[];
  resourceTemplates: string[];
  resource: { uri: string | null; mimeType: string | null; text: string | null };
  prompts: string[];
  prompt: { name: string; messages: { role: string; text: string | null }[] };
  http: HttpExchange[];
}

// ---- the Python side ------------------------------------------------------------------------------------

let sdkCheck: string | null | undefined;
/** Null when `python3` can import `mcp` at the pinned version, else why not (checked once). */
function sdkProblem(): string | null {
  if (sdkCheck !== undefined) return sdkCheck;
  const r = spawnSync('python3', ['-c', 'import mcp, importlib.metadata as m; print(m.version("mcp"))'], {
    encoding: 'utf8',
    timeout: 15_000,
  });
  const found = r.status === 0 ? r.stdout.trim() : null;
  sdkCheck =
    found === SDK_VERSION
      ? null
      : `the Python MCP SDK ${SDK_VERSION} is needed (python3 -c 'import mcp' ${
          found === null ? `failed: ${(r.error?.message ?? r.stderr).trim()}` : `found version ${found}`
        }). .ci/run installs it: python3 -m pip install --quiet --disable-pip-version-check mcp==${SDK_VERSION}`;
  return sdkCheck;
}

const running = new Set<ChildProcess>();

/** Runs the Python client against `url`, bounded in time; resolves with its exit code and output. */
function runPythonClient(url: string, mode: Mode, message: string, bearer?: string): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const started = Date.now();
  const args = [CLIENT_SCRIPT, url, '--mode', mode, '--message', message, '--timeout', String(CLIENT_TIMEOUT_S)];
  if (bearer !== undefined) args.push('--bearer-env', 'GATEHOUSE_TEST_BEARER');
  const env = bearer !== undefined ? { ...process.env, GATEHOUSE_TEST_BEARER: bearer } : process.env;
  const child = spawn('python3', args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      if (child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
      stderr += `\n[test] python client killed after ${PROCESS_TIMEOUT_MS} ms`;
    }, PROCESS_TIMEOUT_MS);
    child.once('error', (err) => {
      clearTimeout(timer);
      running.delete(child);
      reject(new Error(`could not run python3: ${err.message}`));
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      running.delete(child);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}

function killRunningPython(): void {
  for (const child of running) {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

// ---- assertions -----------------------------------------------------------------------------------------

async function probeThroughGatehouse(gw: ServingCli, mode: Mode, label: string, bearer?: string): Promise<PyReport> {
  const problem = sdkProblem();
  if (problem !== null) assert.fail(problem);
  const message = `hello from python (${mode}) via gatehouse ${label}`;
  const run = await runPythonClient(gw.url, mode, message, bearer);
  const context = `python client (--mode ${mode}) against ${gw.url}\n--- python stderr:\n${run.stderr}\n--- gatehouse stderr:\n${gw.stderr()}`;
  assert.equal(run.code, 0, `exited ${run.code}: ${context}`);
  const lines = run.stdout.trim().split('\n');
  assert.equal(lines.length, 1, `expected one JSON line on stdout, got:\n${run.stdout}`);
  const report = JSON.parse(lines[0]!) as PyReport;
  assert.equal(report.ok, true);
  assert.equal(report.sdk, `mcp ${SDK_VERSION}`);
  assert.equal(report.mode, mode);

  // Era negotiated. Legacy: the handshake's version; modern (pinned, or discovered by `auto` because
  // Gatehouse answers server/discover): 2026-07-28.
  if (mode === 'legacy') {
    assert.equal(report.era, 'legacy');
    assert.equal(report.protocolVersion, '2025-11-25');
  } else {
    assert.equal(report.era, 'modern', `auto mode should discover the modern era through Gatehouse: ${context}`);
    assert.equal(report.protocolVersion, '2026-07-28');
  }
  // InitializeResult.serverInfo (legacy) and the DiscoverResult's serverInfo stamp (auto) name the
  // upstream; a pinned client makes no discover call, so the SDK has none to report.
  if (mode === '2026-07-28') assert.equal(report.serverInfo, null);
  else assert.equal(report.serverInfo?.name, 'mcp-servers/everything');

  // What server-everything serves, seen through the gateway.
  assert.ok(report.tools.includes('echo'), `echo is listed: ${report.tools.join(', ')}`);
  assert.ok(report.tools.includes('get-sum'), `get-sum is listed: ${report.tools.join(', ')}`);
  assert.equal(new Set(report.tools).size, report.tools.length, 'tool names are unique');
  assert.deepEqual(report.echo, { isError: false, text: `Echo: ${message}` });
  assert.ok(
    report.resources.some((u) => u.startsWith('demo://resource/static/document/')),
    `static documents are listed: ${report.resources.join(', ')}`,
  );
  assert.ok(report.resourceTemplates.includes('demo://resource/dynamic/text/{resourceId}'), report.resourceTemplates.join(', '));
  assert.equal(report.resource.uri, 'demo://resource/dynamic/text/1');
  assert.equal(report.resource.mimeType, 'text/plain');
  assert.match(report.resource.text ?? '', /^Resource 1: This is a plaintext resource created at /);
  assert.ok(report.prompts.includes('simple-prompt') && report.prompts.includes('args-prompt'), report.prompts.join(', '));
  assert.deepEqual(report.prompt, {
    name: 'simple-prompt',
    messages: [{ role: 'user', text: 'This is a simple prompt without arguments.' }],
  });

  // The wire, as the SDK's HTTP client saw it.
  const posts = report.http.filter((x) => x.http === 'POST');
  const rpcs = posts.map((x) => x.rpc);
  for (const m of ['tools/list', 'tools/call', 'resources/list', 'resources/templates/list', 'resources/read', 'prompts/list', 'prompts/get']) {
    assert.ok(rpcs.includes(m), `${m} was POSTed: ${rpcs.join(', ')}`);
  }
  for (const x of report.http) {
    assert.ok(x.status < 300, `every exchange succeeded: ${JSON.stringify(x)}`);
    // A request POST is answered with application/json or text/event-stream (2025-11-25/basic/transports.mdx
    // §Sending Messages 5; 2026-07-28/basic/transports/streamable-http.mdx §Sending Messages 6).
    if (x.http === 'POST' && x.status === 200) {
      assert.ok(x.contentType === 'application/json' || x.contentType === 'text/event-stream', JSON.stringify(x));
    }
  }
  if (mode === 'legacy') {
    // 2025-11-25/basic/transports.mdx §Session Management 1-2: the InitializeResult response assigns
    // MCP-Session-Id, and the client sends it on every later request; §Protocol Version Header: with the
    // negotiated version. §Session Management 5: the SDK ends the session with DELETE, answered 200.
    const [init, ...rest] = report.http;
    assert.equal(init?.rpc, 'initialize');
    assert.equal(init?.gotSessionId, true, 'Gatehouse relays the session id from the initialize response');
    for (const x of rest) {
      assert.equal(x.sentSessionId, true, `session id sent: ${JSON.stringify(x)}`);
      assert.equal(x.sentProtocolVersion, '2025-11-25', JSON.stringify(x));
    }
    assert.ok(posts.some((x) => x.rpc === 'notifications/initialized' && x.status === 202), 'notifications/initialized → 202');
    const del = report.http.find((x) => x.http === 'DELETE');
    assert.ok(del !== undefined && (del.status === 200 || del.status === 204), `session DELETE: ${JSON.stringify(del)}`);
  } else {
    // 2026-07-28/basic/transports/streamable-http.mdx §Sending Messages 1, §Protocol Version Header: every
    // message is a POST carrying MCP-Protocol-Version; §Earlier Streamable HTTP Revisions: no session ids,
    // no GET stream, no DELETE.
    assert.deepEqual(
      report.http.filter((x) => x.http !== 'POST'),
      [],
      'a modern client makes POSTs only',
    );
    for (const x of posts) {
      assert.equal(x.sentProtocolVersion, '2026-07-28', JSON.stringify(x));
      assert.equal(x.sentSessionId, false, JSON.stringify(x));
      assert.equal(x.gotSessionId, false, `Gatehouse mints no session for a modern client: ${JSON.stringify(x)}`);
    }
    if (mode === 'auto') {
      assert.equal(posts[0]?.rpc, 'server/discover', 'auto mode probes server/discover first');
      assert.ok(!rpcs.includes('initialize'), 'auto mode did not fall back to initialize');
    } else {
      assert.ok(!rpcs.includes('initialize') && !rpcs.includes('server/discover'), 'a pinned client makes neither handshake nor probe');
    }
  }
  return report;
}

// ---- the suites -----------------------------------------------------------------------------------------

after(() => killRunningPython());

test(`python3 can import the Python MCP SDK ${SDK_VERSION} (installed by .ci/run)`, () => {
  const problem = sdkProblem();
  assert.equal(problem, null, problem ?? '');
});

describe('Python MCP SDK → Gatehouse → server-everything over stdio', () => {
  let gw: ServingCli | undefined;
  before(async () => {
    // Gatehouse spawns the upstream itself (2025-11-25/basic/transports.mdx §stdio).
    gw = await serveCli(['--stdio', `${process.execPath} ${EVERYTHING_ENTRY} stdio`, '--port', '0']);
  });
  after(async () => {
    killRunningPython();
    await gw?.stop();
  });
  for (const mode of MODES) {
    test(`mode=${mode}`, async () => {
      await probeThroughGatehouse(gw!, mode, 'stdio');
    });
  }
});

describe('Python MCP SDK → Gatehouse → server-everything over Streamable HTTP', () => {
  let upstream: EverythingHttp | undefined;
  let gw: ServingCli | undefined;
  before(async () => {
    upstream = await startEverythingHttp();
    gw = await serveCli(['--upstream', upstream.url, '--port', '0']);
  });
  after(async () => {
    killRunningPython();
    await gw?.stop();
    await upstream?.close();
  });
  for (const mode of MODES) {
    test(`mode=${mode}`, async () => {
      await probeThroughGatehouse(gw!, mode, 'http');
    });
  }
});

describe('Python MCP SDK with a bearer API key (2026-07-28 authorization: credentials in the header)', () => {
  const KEY = 'gh_python_interop_key_0123456789abcdefghij';
  let gw: ServingCli | undefined;
  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-py-auth-'));
    const file = join(dir, 'gatehouse.yaml');
    writeFileSync(file, [
      'listen: { host: 127.0.0.1, port: 0 }',
      'upstreams:',
      `  - { name: everything, command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(EVERYTHING_ENTRY)}, stdio] }`,
      'auth:',
      `  apiKeys: [{ id: python, hash: "${hashKey(KEY)}", scopes: [] }]`,
    ].join('\n') + '\n');
    gw = await serveCli(['--config', file]);
  });
  after(async () => {
    killRunningPython();
    await gw?.stop();
  });
  test('with the key: the whole probe passes', async () => {
    await probeThroughGatehouse(gw!, 'auto', 'with an API key', KEY);
  });
  test('without it: the SDK is refused and shows the structured reason', async () => {
    const run = await runPythonClient(gw!.url, 'auto', 'no key');
    assert.notEqual(run.code, 0);
    // The SDK surfaces the JSON-RPC error body of the 401: where the credential belongs, and why.
    assert.match(run.stderr, /Authentication required: send "Authorization: Bearer <token>"/);
    assert.match(run.stderr, /missing_credentials/);
  });
});
