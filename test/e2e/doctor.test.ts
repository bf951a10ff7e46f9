// `gatehouse doctor` (issue 15 item 5), run as an operator would (dist/main.js) against real servers: a
// modern and a legacy MCP server, one whose tool names must be rewritten, an OAuth issuer, SQLite and Redis
// stores and a port already taken. Warnings leave the exit code 0; any failure makes it 1.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { jsonResult, startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startAuthServer, type AuthServer } from '../helpers/auth-server.js';
import { runCli } from '../helpers/cli.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

interface Check {
  check: string;
  verdict: 'ok' | 'warn' | 'fail';
  detail: string;
  hint?: string;
  data?: Record<string, unknown>;
}
interface Report {
  config: string;
  verdict: string;
  counts: { ok: number; warn: number; fail: number };
  skipped: string[];
  checks: Check[];
}

const LONG_NAME = `summarize_${'very_'.repeat(12)}long_tool`;
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-doctor-'));
let modern: CountingUpstream;
let legacy: CountingUpstream;
let oddNames: FakeUpstream;
let locked: FakeUpstream;
let issuer: AuthServer;
let busy: Server;
let busyPort: number;

before(async () => {
  [modern, legacy, issuer] = await Promise.all([startCountingUpstream('modern'), startCountingUpstream('legacy'), startAuthServer()]);
  issuer.published.push(await issuer.newKey('key-2', 'ES256'));
  // A modern server listing tools whose names clients cannot be given as they are.
  oddNames = await startFakeUpstream((_req, res, body) => {
    const method = (JSON.parse(body) as { method?: string }).method;
    if (method !== 'tools/list') return void res.writeHead(404).end();
    const tool = (name: string): Record<string, unknown> => ({ name, inputSchema: { type: 'object' } });
    jsonResult(res, body, { tools: [tool('files.search'), tool('files_search'), tool(LONG_NAME), tool('plain')], resultType: 'complete' });
  }, { handshake: 'modern' });
  // An MCP server that refuses Gatehouse's credentials.
  locked = await startFakeUpstream((_req, res) => void res.writeHead(401, { 'www-authenticate': 'Bearer' }).end(), { handshake: false });
  busy = createServer();
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
  busyPort = (busy.address() as AddressInfo).port;
});

after(async () => {
  await Promise.all([modern.close(), legacy.close(), oddNames.close(), locked.close(), issuer.close(), new Promise<void>((r) => busy.close(() => r()))]);
  rmSync(dir, { recursive: true, force: true });
});

function writeConfig(name: string, config: Record<string, unknown>): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, JSON.stringify(config));
  return file;
}

async function doctor(file: string, ...args: string[]): Promise<{ code: number | null; report: Report; stderr: string }> {
  const out = await runCli(['doctor', '--config', file, '--json', '--timeout-ms', '5000', ...args], { timeoutMs: 30_000 });
  assert.equal(out.stdout.trim().split('\n').length, 1, `one JSON line expected:\n${out.stdout}\n${out.stderr}`);
  return { code: out.code, report: JSON.parse(out.stdout) as Report, stderr: out.stderr };
}

function row(report: Report, check: string): Check {
  const found = report.checks.find((c) => c.check === check);
  assert.ok(found, `no "${check}" row in ${report.checks.map((c) => c.check).join(' | ')}`);
  return found;
}

describe('a deployment that can run (warnings only): exit 0', () => {
  const publicUrl = 'http://127.0.0.1:8080/mcp';
  let file: string;
  before(() => {
    file = writeConfig('healthy', {
      listen: { host: '127.0.0.1', port: 0, publicUrl },
      metrics: { enabled: true, host: '127.0.0.1', port: 0 },
      upstreams: [
        { name: 'modern', url: modern.url },
        { name: 'legacy', url: legacy.url, era: 'legacy' },
        { name: 'odd', url: oddNames.url },
      ],
      auth: { oauth: { issuer: issuer.issuer, audience: publicUrl } },
      store: { kind: 'sqlite', path: join(dir, 'state', 'gatehouse.db') },
    });
  });

  test('--json: every check with its verdict; the eras, the tools, the renames and the key algorithms', async () => {
    const { code, report, stderr } = await doctor(file);
    assert.equal(code, 0, stderr);
    assert.equal(report.verdict, 'warn');
    assert.equal(report.counts.fail, 0);
    assert.equal(row(report, 'config').verdict, 'ok');

    assert.equal(row(report, 'upstream modern').verdict, 'ok');
    assert.match(row(report, 'upstream modern').detail, /answers at http:\/\/127\.0\.0\.1:\d+\/mcp over Streamable HTTP \(server "counting-writes" 1\.0\.0\)/);
    const modernEra = row(report, 'upstream modern: era');
    assert.equal(modernEra.verdict, 'ok');
    assert.deepEqual({ era: modernEra.data?.['era'], version: modernEra.data?.['version'], pinned: modernEra.data?.['pinned'] }, { era: 'modern', version: '2026-07-28', pinned: 'auto' });
    const legacyEra = row(report, 'upstream legacy: era');
    assert.equal(legacyEra.verdict, 'ok');
    assert.equal(legacyEra.data?.['era'], 'legacy');
    assert.match(legacyEra.detail, /^legacy \(2025-\d\d-\d\d\); as pinned$/);
    for (const name of ['modern', 'legacy']) {
      const tools = row(report, `upstream ${name}: tools`);
      assert.equal(tools.verdict, 'ok');
      assert.equal(tools.data?.['tools'], 4);
      assert.match(tools.detail, new RegExp(`^4 tools; listed as ${name}_<tool> \\(tools\\.naming\\.prefix: auto\\)$`));
    }

    // Three upstreams: names are prefixed. "files.search" has an unsafe character and then collides with
    // "files_search", which was safe already and keeps its name (8f36e15); the long name passes 64
    // characters; "plain" only gets the prefix.
    const odd = row(report, 'upstream odd: tools');
    assert.equal(odd.verdict, 'warn');
    assert.match(odd.detail, /^4 tools; listed as odd_<tool> .*; 2 renamed$/);
    const dotted = row(report, 'upstream odd: tool "files.search"');
    assert.equal(dotted.verdict, 'warn');
    assert.match(dotted.detail, /^clients see it as "odd_files_search_[0-9a-f]{8}": unsafe characters "\." .*; collides with odd\/files_search as "odd_files_search"$/);
    assert.match(dotted.hint ?? '', /clients must call "odd_files_search_[0-9a-f]{8}"; policies and audit records name it by its ref odd\/files\.search/);
    assert.ok(!report.checks.some((c) => c.check === 'upstream odd: tool "files_search"'), 'an already-safe name keeps its public name');
    const long = row(report, `upstream odd: tool "${LONG_NAME}"`);
    assert.match(long.detail, /longer than 64 characters \(\d+\)/);
    assert.ok(!report.checks.some((c) => c.check === 'upstream odd: tool "plain"'), 'a prefix alone is not a rename');
    const renamed = (odd.data?.['renamed'] as Array<{ name: string; publicName: string }>).map((r) => r.name).sort();
    assert.deepEqual(renamed, ['files.search', LONG_NAME].sort());

    const as = row(report, 'authorization server');
    assert.equal(as.verdict, 'ok');
    assert.match(as.detail, /metadata at http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-authorization-server/);
    const keys = row(report, 'key set');
    assert.equal(keys.verdict, 'ok');
    assert.deepEqual(keys.data?.['algorithms'], ['RS256', 'ES256']);
    assert.deepEqual((keys.data?.['keys'] as Array<{ kid: string; verifies: string[] }>).map((k) => [k.kid, k.verifies]), [['key-1', ['RS256']], ['key-2', ['ES256']]]);
    assert.match(keys.detail, /^2 keys at http:\/\/127\.0\.0\.1:\d+\/jwks; tokens signed with RS256, ES256 can be verified/);

    const store = row(report, 'store');
    assert.equal(store.verdict, 'ok');
    assert.equal(store.detail, `SQLite: will be created at ${join(dir, 'state', 'gatehouse.db')} (with its directory)`);
    assert.equal(row(report, 'listen 127.0.0.1:0').verdict, 'ok');
    assert.equal(row(report, 'metrics 127.0.0.1:0').verdict, 'ok');
  });

  test('nothing is created: the store file and its directory are still missing after the check', async () => {
    const { existsSync } = await import('node:fs');
    assert.equal(existsSync(join(dir, 'state')), false);
  });

  test('the table: a row per check with its verdict, hints under the rows that have one, a summary', async () => {
    const out = await runCli(['doctor', '--config', file, '--timeout-ms', '5000'], { timeoutMs: 30_000 });
    assert.equal(out.code, 0, out.stderr);
    const lines = out.stdout.split('\n');
    assert.equal(lines[0], `gatehouse doctor: ${file}`);
    assert.match(lines[2] ?? '', /^VERDICT\s+CHECK\s+DETAIL$/);
    assert.match(out.stdout, /\nok\s+upstream legacy: era\s+legacy \(2025-/);
    assert.match(out.stdout, /\nwarn\s+upstream odd: tool "files\.search"\s+clients see it as .*\n\s+hint: clients must call/);
    assert.match(out.stdout, /\n0 failed, 3 warnings, \d+ ok\n$/);
    assert.equal(out.stderr, '');
  });
});

describe('a deployment that cannot run: exit 1, each failure with its hint', () => {
  let file: string;
  before(() => {
    const existing = join(dir, 'existing.db');
    writeFileSync(existing, '');
    file = writeConfig('broken', {
      listen: { host: '127.0.0.1', port: busyPort, publicUrl: 'http://127.0.0.1:8080/mcp' },
      upstreams: [
        { name: 'pinned', url: legacy.url, era: 'modern' },
        { name: 'gone', url: 'http://127.0.0.1:1/mcp' },
        { name: 'fine', url: modern.url, era: 'modern' },
        { name: 'locked', url: locked.url, headers: { Authorization: 'Bearer wrong-token-0123456789' } },
      ],
      auth: { oauth: { issuer: 'http://127.0.0.1:1', audience: 'http://127.0.0.1:8080/mcp' } },
      store: { kind: 'sqlite', path: existing },
    });
  });

  test('a pin that contradicts the detected era, an unreachable upstream and issuer, a busy port', async () => {
    const { code, report, stderr } = await doctor(file);
    assert.equal(code, 1, stderr);
    assert.equal(report.verdict, 'fail');

    const pinned = row(report, 'upstream pinned: era');
    assert.equal(pinned.verdict, 'fail');
    assert.match(pinned.detail, /^pinned era: modern, but the server answered like a legacy server \(2025-\d\d-\d\d\)$/);
    assert.match(pinned.hint ?? '', /^set era: auto \(or legacy\) on upstreams\[0\]/);
    assert.equal(row(report, 'upstream pinned').verdict, 'ok', 'it is reachable; only the pin is wrong');
    // Its tools are still listed (through the bridge Gatehouse would use with the right pin).
    assert.equal(row(report, 'upstream pinned: tools').data?.['tools'], 4);

    const gone = row(report, 'upstream gone');
    assert.equal(gone.verdict, 'fail');
    assert.equal(gone.detail, 'http://127.0.0.1:1/mcp is unreachable (ECONNREFUSED)');
    assert.match(gone.hint ?? '', /is the server running, and is upstreams\[1\]\.url right\?/);
    assert.ok(!report.checks.some((c) => c.check === 'upstream gone: era'));

    const refused = row(report, 'upstream locked: era');
    assert.equal(refused.verdict, 'fail');
    assert.match(refused.detail, /^answers, but not as an MCP server Gatehouse can use: it answered neither server\/discover nor initialize \(HTTP 401\)$/);
    assert.match(refused.hint ?? '', /refused Gatehouse's credentials: check upstreams\[3\]\.headers/);
    assert.doesNotMatch(JSON.stringify(report), /wrong-token/);

    assert.equal(row(report, 'upstream fine: era').verdict, 'ok');
    assert.match(row(report, 'upstream fine: era').detail, /as pinned$/);

    const as = row(report, 'authorization server');
    assert.equal(as.verdict, 'fail');
    assert.match(as.detail, /no metadata naming the issuer http:\/\/127\.0\.0\.1:1\//);

    const store = row(report, 'store');
    assert.equal(store.verdict, 'ok');
    assert.match(store.detail, /opens and is writable$/);

    const port = row(report, `listen 127.0.0.1:${busyPort}`);
    assert.equal(port.verdict, 'fail');
    assert.equal(port.detail, `port ${busyPort} is in use`);
    assert.match(port.hint ?? '', /choose another listen\.port \(0 picks a free one\), or stop what holds the port/);
  });

  test('--skip leaves areas out; the exit code follows what was checked', async () => {
    const { code, report } = await doctor(file, '--skip', 'ports', '--skip', 'auth');
    assert.equal(code, 1, 'the upstreams still fail');
    assert.deepEqual(report.skipped, ['auth', 'ports']);
    assert.ok(!report.checks.some((c) => c.check.startsWith('listen') || c.check === 'authorization server'));
  });
});

describe('config and usage problems', () => {
  test('a config that does not load is one failed row per problem, and nothing else is checked', async () => {
    const file = writeConfig('invalid', { upstreams: [{ name: 'x', url: 'not a url' }], listen: { hostt: 'a' } });
    const { code, report } = await doctor(file);
    assert.equal(code, 1);
    assert.ok(report.checks.length >= 2);
    for (const c of report.checks) {
      assert.equal(c.check, 'config');
      assert.equal(c.verdict, 'fail');
      assert.match(c.hint ?? '', /gatehouse check-config/);
    }
  });

  test('a config this build refuses: the semantic checks fail it, the other checks still run', async () => {
    const file = writeConfig('refused', { listen: { host: '0.0.0.0', port: 0 }, upstreams: [{ name: 'modern', url: modern.url }], auth: { anonymous: true }, store: { path: join(dir, 'refused.db') } });
    const { code, report } = await doctor(file);
    assert.equal(code, 1);
    assert.match(row(report, 'config').detail, /auth\.anonymous: anonymous access is allowed only on a loopback listener/);
    assert.equal(row(report, 'upstream modern: era').verdict, 'ok');
  });

  test('bad flags exit 2 with the help', async () => {
    const out = await runCli(['doctor', '--skip', 'everything']);
    assert.equal(out.code, 2);
    assert.match(out.stderr, /--skip takes upstreams, auth, store, ports/);
    const help = await runCli(['doctor', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: gatehouse doctor/);
    assert.match((await runCli(['--help'])).stdout, /gatehouse doctor \[--config FILE\]/);
  });
});

describe('a Redis store', () => {
  let redis: TestRedis;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await redis.stop();
  });

  test('PING and a scratch write pass; a Redis that is down fails', async () => {
    const config = (url: string): Record<string, unknown> => ({ listen: { port: 0 }, upstreams: [{ name: 'modern', url: modern.url }], auth: { anonymous: true }, store: { kind: 'redis', url, commandTimeoutMs: 1000 } });
    const up = await doctor(writeConfig('redis-up', config(redis.url)), '--skip', 'upstreams');
    assert.equal(up.code, 0, JSON.stringify(up.report.checks));
    assert.match(row(up.report, 'store').detail, /^Redis at redis:\/\/127\.0\.0\.1:\d+: PING answered, a scratch key was written \(with a TTL\) under "gatehouse:"$/);
    const down = await doctor(writeConfig('redis-down', config('redis://127.0.0.1:1')), '--skip', 'upstreams');
    assert.equal(down.code, 1);
    assert.equal(row(down.report, 'store').verdict, 'fail');
    assert.match(row(down.report, 'store').hint ?? '', /check store\.url/);
  });
});

describe('stdio upstreams', () => {
  test('a command that starts and answers (its era and tools), and one that cannot start', async () => {
    const file = writeConfig('stdio', {
      listen: { port: 0 },
      auth: { anonymous: true },
      store: { path: join(dir, 'stdio.db') },
      upstreams: [
        { name: 'modern', command: [process.execPath, 'test/fixtures/upstreams/modern-stdio-server.mjs'] },
        { name: 'missing', command: [join(dir, 'no-such-server')] },
      ],
    });
    const { code, report } = await doctor(file, '--skip', 'ports');
    assert.equal(code, 1);
    assert.match(row(report, 'upstream modern').detail, /modern-stdio-server\.mjs" starts and answers/);
    assert.equal(row(report, 'upstream modern: era').data?.['era'], 'modern');
    assert.equal(row(report, 'upstream modern: tools').verdict, 'ok');
    const missing = row(report, 'upstream missing');
    assert.equal(missing.verdict, 'fail');
    assert.match(missing.detail, /ENOENT/);
    assert.match(missing.hint ?? '', /upstreams\[1\]\.command runs on its own/);
  });
});

describe('HTTP+SSE upstreams (issue 16 item 5)', () => {
  test('the transport is reported: detected under transport: auto, or named; Streamable HTTP says so too', async () => {
    const { startEverythingSse } = await import('../fixtures/upstreams/everything-http.js');
    const sse = await startEverythingSse();
    try {
      const file = writeConfig('sse', {
        listen: { port: 0 },
        auth: { anonymous: true },
        store: { path: join(dir, 'sse.db') },
        upstreams: [
          { name: 'detected', url: sse.url },
          { name: 'named', url: sse.url, transport: 'sse' },
          { name: 'streamable', url: modern.url },
        ],
      });
      const { code, report } = await doctor(file, '--skip', 'ports');
      assert.equal(code, 0, JSON.stringify(report.checks.filter((c) => c.verdict === 'fail')));
      for (const name of ['detected', 'named']) {
        const reach = row(report, `upstream ${name}`);
        assert.match(reach.detail, /over HTTP\+SSE \(2024-11-05\)/);
        assert.equal(reach.data?.['transport'], 'sse');
        assert.equal(row(report, `upstream ${name}: era`).data?.['era'], 'legacy');
        assert.equal(row(report, `upstream ${name}: tools`).verdict, 'ok');
      }
      assert.match(row(report, 'upstream streamable').detail, /over Streamable HTTP/);
    } finally {
      await sse.close();
    }
  });
});
