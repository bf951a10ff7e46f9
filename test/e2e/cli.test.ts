// The `gatehouse` command as an operator uses it: every command, its help, exit codes, and serving in
// front of an HTTP or stdio upstream without a config file. Runs the built dist/main.js.

import { after, describe, test } from 'node:test';
import { execFile } from 'node:child_process';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashKey } from '../../src/auth/key-hash.js';
import { jsonResult, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { isAlive, runCli, serveCli, ROOT } from '../helpers/cli.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-cli-'));
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe('version and help', () => {
  test('--version prints the package version', async () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const r = await runCli(['--version']);
    assert.equal(r.code, 0);
    assert.equal(r.stdout, `gatehouse ${pkg.version}\n`);
  });

  for (const args of [['--help'], ['serve', '--help'], ['check-config', '--help'], ['hash-key', '--help'], ['audit', '--help'], ['budgets', '--help']]) {
    test(`${args.join(' ')} prints usage and exits 0`, async () => {
      const r = await runCli(args);
      assert.equal(r.code, 0);
      assert.match(r.stdout, /Usage/);
    });
  }

  test('an unknown command or flag exits 2 with usage', async () => {
    const a = await runCli(['frobnicate']);
    assert.equal(a.code, 2);
    assert.match(a.stderr, /unknown command "frobnicate"/);
    const b = await runCli(['serve', '--prot', '1']);
    assert.equal(b.code, 2);
    assert.match(b.stderr, /--prot/);
  });
});

describe('check-config', () => {
  test('every example in config/ is valid', async () => {
    const r = await runCli(['check-config', 'config/gatehouse.default.yaml']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'config/gatehouse.default.yaml: ok\n');
  });

  for (const file of readdirSync(join(ROOT, 'config')).filter((f) => f.endsWith('.yaml'))) {
    test(`check-config --env-optional config/${file} exits 0 where its secrets are not set, as in CI`, async () => {
      const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/SECRET|TOKEN/.test(k)));
      const r = await runCli(['check-config', '--env-optional', `config/${file}`], { env });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, new RegExp(`^config/${file.replace('.', '\\.')}: ok`));
      // Absent secrets are named as warnings, located like errors.
      for (const line of r.stderr.split('\n').filter(Boolean)) assert.match(line, /^warning: config\/.*:\d+:\d+ \S+: environment variable "\w+" is not set$/);
    });
  }

  test('without --env-optional an absent secret is an error; an unreadable path says so in words', async () => {
    const file = join(dir, 'secret.yaml');
    writeFileSync(file, 'upstreams: [{ name: a, url: "http://127.0.0.1:3001/mcp", headers: { Authorization: "Bearer ${env:GH_TEST_ABSENT}" } }]\nauth: { anonymous: true }\n');
    const strict = await runCli(['check-config', file]);
    assert.equal(strict.code, 1);
    assert.match(strict.stderr, new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:1:\\d+ upstreams\\[0\\]\\.headers\\.Authorization: environment variable "GH_TEST_ABSENT" is not set`, 'm'));
    const lenient = await runCli(['check-config', '--env-optional', file]);
    assert.equal(lenient.code, 0, lenient.stderr);
    assert.match(lenient.stdout, /ok \(1 secret not present here\)/);
    const missing = await runCli(['check-config', join(dir, 'nope.yaml')]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /nope\.yaml: no such file/);
    assert.doesNotMatch(missing.stderr, /0:0|ENOENT/);
    const directory = await runCli(['check-config', dir]);
    assert.equal(directory.code, 1);
    assert.match(directory.stderr, /: this is a directory, not a config file/);
  });

  test('a misspelt key gets the nearest known one as a suggestion', async () => {
    const file = join(dir, 'typo.yaml');
    writeFileSync(file, 'listen:\n  hostt: 127.0.0.1\nupstreams:\n  - name: a\n    url: "http://127.0.0.1:3001/mcp"\n    timeuots: {}\nauth: { anonymous: true }\nfrobnicate: 1\n');
    const r = await runCli(['check-config', file]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /:2:3 listen\.hostt: unknown key; did you mean host\?/);
    assert.match(r.stderr, /:6:5 upstreams\[0\]\.timeuots: unknown key; did you mean timeouts\?/);
    assert.match(r.stderr, /:8:1 frobnicate: unknown key\n/, 'no suggestion when nothing is close');
  });

  test('an invalid file exits 1 and lists every problem with line, column and key path', async () => {
    const file = join(dir, 'gatehouse.yaml');
    writeFileSync(file, 'listen:\n  host: 127.0.0.1\n  prot: 8080\nupstreams:\n  - name: a\n    url: 12\n');
    const r = await runCli(['check-config', file]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /gatehouse\.yaml:3:3 listen\.prot: unknown key/);
    assert.match(r.stderr, /gatehouse\.yaml:6:\d+ upstreams\[0\]\.url: /);
  });

  test('approvals without the admin API, or an admin API nobody can use, exit 1 and say why', async () => {
    const file = join(dir, 'keys.yaml');
    const keys = `auth:\n  apiKeys: [{ id: k, hash: "${hashKey('x'.repeat(20))}", scopes: [] }]\n`;
    writeFileSync(file, `upstreams: [{ name: a, url: "http://127.0.0.1:3001/mcp" }]\n${keys}policy:\n  approvals: [{ id: destructive, annotations: { destructiveHint: true } }]\nadmin: { enabled: false }\n`);
    let r = await runCli(['check-config', file]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /policy\.approvals: reviewers decide through the admin API/);
    writeFileSync(file, `upstreams: [{ name: a, url: "http://127.0.0.1:3001/mcp" }]\n${keys}admin: { enabled: true }\n`);
    r = await runCli(['check-config', file]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /admin\.enabled: the admin API needs admin\.token/);
    writeFileSync(file, `upstreams: [{ name: a, url: "http://127.0.0.1:3001/mcp" }]\n${keys}admin: { enabled: true, token: "0123456789abcdef" }\n`);
    r = await runCli(['check-config', file]);
    assert.equal(r.code, 0, r.stderr);
  });

  test('an OAuth audience other than the public URL is refused (RFC 8707: tokens are minted for this resource)', async () => {
    const file = join(dir, 'oauth.yaml');
    const oauth = 'oauth: { issuer: "https://as.example", audience: "https://other.example/mcp" }';
    writeFileSync(file, `upstreams: [{ name: a, url: "http://127.0.0.1:3001/mcp" }]\nlisten: { publicUrl: "https://mcp.example/mcp" }\nauth:\n  ${oauth}\n`);
    const r = await runCli(['check-config', file]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /auth\.oauth\.audience: must equal listen\.publicUrl/);
    // The aud check is exact, and clients ask for tokens for the metadata's resource string: a near miss is
    // refused with a hint rather than failing every token later.
    writeFileSync(file, `upstreams: [{ name: a, url: "http://127.0.0.1:3001/mcp" }]\nlisten: { publicUrl: "https://MCP.example/mcp/" }\nauth:\n  oauth: { issuer: "https://as.example", audience: "https://mcp.example/mcp" }\n`);
    const near = await runCli(['check-config', file]);
    assert.equal(near.code, 1);
    assert.match(near.stderr, /differ only in case or a trailing slash/);
    writeFileSync(file, `upstreams: [{ name: a, url: "http://127.0.0.1:3001/mcp" }]\nlisten: { publicUrl: "https://mcp.example/mcp" }\nauth:\n  oauth: { issuer: "https://as.example", audience: "https://mcp.example/mcp" }\n`);
    const ok = await runCli(['check-config', file]);
    assert.equal(ok.code, 0, ok.stderr);
  });

  test('a missing environment variable is named', async () => {
    const file = join(dir, 'env.yaml');
    writeFileSync(file, 'upstreams:\n  - name: a\n    url: http://127.0.0.1:3001/mcp\n    headers: { Authorization: "Bearer ${env:GH_TEST_UNSET_TOKEN}" }\nauth: { anonymous: true }\n');
    const r = await runCli(['check-config', file], { env: { PATH: process.env.PATH } });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /GH_TEST_UNSET_TOKEN/);
    const ok = await runCli(['check-config', file], { env: { PATH: process.env.PATH, GH_TEST_UNSET_TOKEN: 'secret-value' } });
    assert.equal(ok.code, 0, ok.stderr);
    assert.doesNotMatch(ok.stdout + ok.stderr, /secret-value/);
  });
});

describe('hash-key', () => {
  test('hashes a given key', async () => {
    const key = 'gh_' + 'k'.repeat(40);
    const r = await runCli(['hash-key', key]);
    assert.equal(r.code, 0);
    assert.equal(r.stdout, `${hashKey(key)}\n`);
    assert.match(r.stdout, /^sha256:[0-9a-f]{64}\n$/);
  });

  test('reads the key from stdin with "-"', async () => {
    const key = 'gh_' + 's'.repeat(40);
    const r = await runCli(['hash-key', '-'], { input: key + '\n' });
    assert.equal(r.stdout, `${hashKey(key)}\n`);
  });

  test('generates a key and prints it with its hash', async () => {
    const r = await runCli(['hash-key']);
    const m = /^key: {2}(gh_[A-Za-z0-9_-]{43})\nhash: (sha256:[0-9a-f]{64})\n$/.exec(r.stdout);
    assert.ok(m, r.stdout);
    assert.equal(hashKey(m[1]!), m[2]);
  });

  // README §Authentication: a credential that is no configured key goes to introspection unless it starts with
  // gh_ or one of auth.apiKeyPrefixes. A key of another shape hashed without a word, so an operator with OAuth
  // on learnt of apiKeyPrefixes only from the README. The note goes to stderr: stdout, piped into a config,
  // stays exactly the hash.
  test('a key not starting with gh_ is hashed, with a note on stderr naming auth.apiKeyPrefixes', async () => {
    const key = 'acme_live_' + 'q'.repeat(32);
    const r = await runCli(['hash-key', key]);
    assert.equal(r.code, 0);
    assert.equal(r.stdout, `${hashKey(key)}\n`);
    assert.match(r.stderr, /^note: this key does not start with gh_.*auth\.apiKeyPrefixes/s);
    assert.doesNotMatch(r.stderr, /acme_live_q/, 'the key is not echoed');
    const piped = await runCli(['hash-key', '-'], { input: key + '\n' });
    assert.equal(piped.stdout, `${hashKey(key)}\n`);
    assert.match(piped.stderr, /auth\.apiKeyPrefixes/);
    const own = await runCli(['hash-key', 'gh_' + 'k'.repeat(40)]);
    assert.equal(own.stderr, '', 'a key of the built-in shape needs no note');
    const generated = await runCli(['hash-key']);
    assert.equal(generated.stderr, '');
  });

  test('refuses a short key', async () => {
    const r = await runCli(['hash-key', 'short']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /shorter than 16/);
  });
});

describe('serve', () => {
  test('a busy port says so and how to choose another, after the lines logged before it, with no shutdown noise', async () => {
    const { createServer } = await import('node:net');
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as { port: number }).port;
    try {
      const r = await runCli(['serve', '--upstream', 'http://127.0.0.1:9/mcp', '--port', String(port)]);
      assert.equal(r.code, 1);
      const lines = r.stderr.trim().split('\n');
      assert.equal(lines.at(-1), `port ${port} on 127.0.0.1 is in use (the MCP endpoint); choose another with \`gatehouse serve … --port ${port + 1}\`, or \`--port 0\` for a free one`);
      // What was logged before the failure (anonymous access on loopback) comes before it.
      assert.match(lines[0]!, /authentication is off/);
      assert.doesNotMatch(r.stderr, /draining|"stopped"|EADDRINUSE/);
      const viaNpm = await runCli(['serve', '--upstream', 'http://127.0.0.1:9/mcp', '--port', String(port)], { env: { ...process.env, npm_lifecycle_event: 'start' } });
      assert.match(viaNpm.stderr, new RegExp(`choose another with \`npm start -- --port ${port + 1}\``));

      // log.format: auto. Piped (above), the lines are JSON; on a terminal (a pty from util-linux `script`),
      // they are readable lines.
      assert.match(lines[0]!, /^\{"level":"warn"/);
      const tty = await new Promise<string>((resolve, reject) => {
        const cmd = `"${process.execPath}" dist/main.js serve --upstream http://127.0.0.1:9/mcp --port ${port}`;
        execFile('script', ['-qec', cmd, '/dev/null'], { cwd: ROOT, env: { ...process.env, NO_COLOR: '1' }, timeout: 15_000 }, (err, stdout) => (err && !('code' in err) ? reject(err) : resolve(stdout)));
      });
      assert.match(tty, /\[\d\d:\d\d:\d\d\.\d{3}\] WARN: authentication is off/);
      assert.doesNotMatch(tty, /"level":/);
    } finally {
      taken.close();
    }
  });

  test('--upstream URL serves without a config file and stops on SIGTERM with exit 0', async () => {
    const up = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { tools: [] }));
    cleanups.push(() => up.close());
    const gw = await serveCli(['--upstream', up.url, '--port', '0', '--path', '/gateway']);
    cleanups.push(() => gw.stop());
    assert.match(gw.url, /^http:\/\/127\.0\.0\.1:\d+\/gateway$/);
    assert.match(gw.stdout(), /claude mcp add --transport http gatehouse http:\/\/127\.0\.0\.1:\d+\/gateway/);
    assert.match(gw.stdout(), /curl -s http:\/\/127\.0\.0\.1:\d+\/gateway/);
    assert.match(gw.stderr(), /authentication is off/);
    const res = await post(gw.url, rpc(1, 'tools/list'));
    assert.deepEqual(res.json(), { jsonrpc: '2.0', id: 1, result: { tools: [] } });
    assert.equal(await gw.stop(), 0);
  });

  test('--stdio "CMD ARGS" spawns the server and stops it on SIGTERM', async () => {
    const gw = await serveCli(['--stdio', `"${process.execPath}" node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio`, '--port', '0']);
    cleanups.push(() => gw.stop());
    const init = await post(gw.url, rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
    assert.equal(init.status, 200);
    assert.equal(init.json().result.serverInfo.name, 'mcp-servers/everything');
    const session = { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': '2025-11-25' };
    assert.equal((await post(gw.url, rpc(2, 'tools/list'), session)).status, 200);
    // The era probe's child comes and goes first; the last child started is the one serving sessions.
    const pids = [...gw.stderr().matchAll(/"msg":"stdio upstream started".*?"pid":(\d+)/g)].map((m) => Number(m[1]));
    const pid = pids.at(-1) ?? 0;
    assert.ok(pid > 0 && isAlive(pid), 'the child process runs');
    assert.equal(await gw.stop(), 0);
    assert.equal(isAlive(pid), false, 'the child process was stopped');
    // The log tells the shutdown in order: the child stops before the gateway says it has stopped.
    const msgs = [...gw.stderr().matchAll(/"msg":"([^"]+)"/g)].map((m) => m[1]);
    assert.ok(msgs.includes('stdio upstream stopped'));
    assert.equal(msgs.at(-1), 'stopped', `last lines: ${msgs.slice(-4).join(' | ')}`);
  });

  test('--log-level overrides the level only: the file\'s other log settings (requests: false) stay', async () => {
    const up = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { tools: [] }));
    cleanups.push(() => up.close());
    const file = join(dir, 'quiet-requests.yaml');
    writeFileSync(file, `listen: { host: 127.0.0.1, port: 0 }\nupstreams: [{ name: a, url: "${up.url}" }]\nauth: { anonymous: true }\nlog: { level: warn, requests: false, format: json }\n`);
    const gw = await serveCli(['--config', file, '--log-level', 'info']);
    cleanups.push(() => gw.stop());
    assert.equal((await post(gw.url, rpc(1, 'tools/list'))).status, 200);
    assert.equal(await gw.stop(), 0);
    assert.match(gw.stderr(), /"msg":"gatehouse listening"/, 'the level came from the flag');
    assert.doesNotMatch(gw.stderr(), /"msg":"request"/, 'requests: false came from the file');
  });

  test('--config FILE with --port override; a config this build cannot serve exits 1', async () => {
    const gw = await serveCli(['--config', 'config/gatehouse.minimal.yaml', '--port', '0']);
    cleanups.push(() => gw.stop());
    assert.match(gw.url, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    assert.equal(await gw.stop(), 0, gw.stderr());
    const file = join(dir, 'public.yaml');
    writeFileSync(file, 'listen: { host: 0.0.0.0, port: 0 }\nupstreams: [{ name: a, url: "http://127.0.0.1:3001/mcp" }]\nauth: { anonymous: true }\n');
    const r = await runCli(['serve', '--config', file]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /anonymous access is allowed only on a loopback listener/);
    const tls = join(dir, 'tls.yaml');
    writeFileSync(tls, 'upstreams: [{ name: a, url: "http://127.0.0.1:3001/mcp" }]\nauth: { anonymous: true }\nstore: { kind: redis, url: "redis://127.0.0.1:6379", tls: { ca: "pem" } }\n');
    const check = await runCli(['check-config', tls]);
    assert.equal(check.code, 1);
    assert.match(check.stderr, /store\.tls: applies to TLS connections only; write the URL as rediss:\/\//);
  });
});
