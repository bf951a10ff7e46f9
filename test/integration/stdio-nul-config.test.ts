// A stdio upstream's command, arguments, environment and working directory go to the operating system as
// C strings, which end at a NUL character: Node's spawn refuses any that holds one (ERR_INVALID_ARG_VALUE).
// The schema takes any string, and a secret read through ${file:...} or ${env:...} brings a NUL in (a file
// written by a program that pads it, a value copied from a binary). Until 4 December such a config checked
// "ok", started and was applied by a reload; the upstream then failed at its child's first start, every call
// to it refused as "an unexpected error", and each logged Node's error, which quotes the value: a credential
// in clear, on every call (the log's scrubbing looks for the secret whole; Node writes its NUL as \x00). The
// working config was gone too. DESIGN.md §3: an invalid new version is refused, logged and
// counted, and the old one stays; the semantic checks now refuse it, by key, never by value.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkConfigCommand } from '../../src/cli/check-config.js';
import { validateConfigObject } from '../../src/config/load.js';
import { unsupportedFeatures } from '../../src/config/semantic-checks.js';
import { createGateway } from '../../src/gateway.js';
import { createLogger } from '../../src/log/logger.js';
import { GatewayError } from '../../src/errors.js';
import { StdioProcess } from '../../src/upstream/stdio-process.js';
import { reloadTaken } from '../helpers/file-reload.js';
import { startGatewayFromConfigFile } from '../helpers/gateway.js';
import { post, rpc, LEGACY_HEADERS } from '../helpers/http.js';
import { replaceLikeSecretVolume } from '../helpers/secret-volume.js';
import { isAlive, stdioChildPids, waitUntil } from '../helpers/stdio-children.js';

const FAKE = fileURLToPath(new URL('../fixtures/upstreams/stdio-fake.mjs', import.meta.url));
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const stdio = (upstream: Record<string, unknown>) => validateConfigObject({ upstreams: [{ name: 'up', command: [process.execPath, FAKE], ...upstream }], auth: { anonymous: true }, listen: { host: '127.0.0.1' } });

test('a NUL in the command, an argument, an environment variable or cwd is a problem naming the key, not the value', () => {
  assert.deepEqual(unsupportedFeatures(stdio({ command: ['node\u0000x', 'server.js'] })), ['upstreams[0].command[0]: holds a NUL character, which a command, an argument, an environment variable or a directory cannot (the process could not be started; a secret file read with ${file:...} may hold one)']);
  assert.deepEqual(unsupportedFeatures(stdio({ command: ['node', 'server.js', '--token=sec\u0000ret'] })), ['upstreams[0].command[2]: holds a NUL character, which a command, an argument, an environment variable or a directory cannot (the process could not be started; a secret file read with ${file:...} may hold one)']);
  const env = unsupportedFeatures(stdio({ env: { API_KEY: 'hunter\u00002', TOKEN: '\u0000', FINE: 'ok' } }));
  assert.deepEqual(env.map((p) => p.split(':')[0]), ['upstreams[0].env.API_KEY', 'upstreams[0].env.TOKEN']);
  // A variable's name is the schema's to judge (letters, digits and _), a NUL in it refused there.
  assert.throws(() => stdio({ env: { 'BAD\u0000NAME': 'x' } }), /upstreams\[0\]\.env\["BAD\\u0000NAME"\]: is not a valid environment variable name/);
  assert.match(unsupportedFeatures(stdio({ cwd: '/tmp\u0000/x' }))[0]!, /^upstreams\[0\]\.cwd: holds a NUL character/);
  for (const problem of env) assert.doesNotMatch(problem, /hunter/, 'no value is repeated');
  // Any other character is the program's business: these pass.
  assert.deepEqual(unsupportedFeatures(stdio({ command: ['node', 'a b', 'caf\u00e9', 'line\nbreak'], env: { A: 'tab\tand\u20ac' } })), []);
});

test('check-config exits 1 on a secret that puts a NUL in a stdio upstream\'s env, naming the key and not the value', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-nul-'));
  const file = join(dir, 'gatehouse.yaml');
  writeFileSync(join(dir, 'api-key'), 'a-secret\u0000credential\n');
  writeFileSync(file, `upstreams: [{ name: up, command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(FAKE)}], env: { API_KEY: "\${file:api-key}" } }]\nauth: { anonymous: true }\n`);
  const out: string[] = [];
  const err: string[] = [];
  const code = await checkConfigCommand([file], { out: (t) => out.push(t), err: (t) => err.push(t), readStdin: async () => '', env: {} });
  assert.equal(code, 1, out.join(''));
  assert.match(err.join(''), /upstreams\[0\]\.env\.API_KEY: holds a NUL character/);
  assert.doesNotMatch(err.join(''), /a-secret|credential\b/);
});

test('a start with such a config is refused; a reload to one is refused and the running upstream still serves', async () => {
  assert.throws(() => createGateway(stdio({ env: { API_KEY: 'sec\u0000ret' } }), createLogger('error', () => {})), /upstreams\[0\]\.env\.API_KEY: holds a NUL character/);

  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-nul-'));
  const file = join(dir, 'gatehouse.yaml');
  const secret = join(dir, 'api-key');
  replaceLikeSecretVolume(secret, 'working-credential\n');
  writeFileSync(
    file,
    `listen: { port: 0 }\nupstreams: [{ name: up, command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(FAKE)}], env: { API_KEY: "\${file:api-key}" }, era: legacy, processes: perSession }]\n` +
      `auth: { anonymous: true }\nidempotency: { requireKeys: false }\nstore: { kind: sqlite, path: ${JSON.stringify(join(dir, 'g.db'))} }\nshutdown: { graceMs: 100 }\n`,
  );
  const gw = await startGatewayFromConfigFile(file);
  const { gateway, url, logs } = gw;
  cleanups.push(async () => {
    await gateway.close();
    const pids = stdioChildPids(gw);
    await waitUntil(() => pids.every((pid) => !isAlive(pid)), 10_000);
    for (const pid of pids.filter(isAlive)) process.kill(pid, 'SIGKILL');
  });
  const call = async (id: number) => {
    const init = await post(url, rpc(`init-${id}`, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
    assert.equal(init.status, 200, init.text);
    return post(url, rpc(id, 'tools/call', { name: 'echo' }), { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']) });
  };
  assert.match((await call(1)).json().result.content[0].text, /^pid \d+$/);

  replaceLikeSecretVolume(secret, 'broken\u0000credential\n');
  // Taken by the watcher's poll or by this look, whichever came first: the refusal is what is waited for.
  assert.ok(await reloadTaken(gateway, () => gateway.reloads.refused > 0), JSON.stringify(logs.map((l) => l.msg)));
  assert.deepEqual(gateway.reloads, { applied: 0, refused: 1 });
  const cause = logs.find((l) => l.msg === 'config reload: a file the config reads changed');
  assert.deepEqual(cause?.files, [secret], 'the reload names the rotated secret file');
  const refused = logs.find((l) => l.msg === 'config reload refused; the running config stays');
  assert.ok(refused !== undefined, JSON.stringify(logs.slice(-5)));
  assert.match(JSON.stringify(refused.problems), /upstreams\[0\]\.env\.API_KEY: holds a NUL character/);
  // A new child of the running config starts and serves.
  const after = await call(2);
  assert.equal(after.status, 200, after.text);
  assert.match(after.json().result.content[0].text, /^pid \d+$/);
  assert.doesNotMatch(JSON.stringify(logs), /broken|working-credential/, 'no value is logged');
});

test('a child that cannot be spawned at all (such a value, had it come through) is the upstream\'s clear failure, its value in no log line', async () => {
  const lines: string[] = [];
  const proc = new StdioProcess({ upstream: 'up', command: [process.execPath, FAKE], env: { API_KEY: 'hunter\u00002' }, requestTimeoutMs: 5_000 }, createLogger('info', (l) => void lines.push(l)));
  let started: Promise<void> | undefined;
  assert.doesNotThrow(() => (started = proc.start()), 'refused as a rejection, as a command that is not found is');
  await assert.rejects(started!, (err: GatewayError) => err instanceof GatewayError && err.code === 'GW_ERR_UPSTREAM_EXITED' && /could not be started/.test(err.message) && !/hunter/.test(err.message));
  assert.equal(proc.alive, false);
  assert.doesNotMatch(lines.join('\n'), /hunter/);
});
