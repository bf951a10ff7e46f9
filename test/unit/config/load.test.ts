// Unit tests for src/config/load.ts: located issues, human messages, one message per mistake, defaults.

import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { mkdtemp, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { rootCertificates } from 'node:tls';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigError, loadConfigFile, parseConfigText, validateConfigObject, type ConfigIssue } from '../../../src/config/load.js';
import { isStdioUpstream } from '../../../src/config/types.js';

const UPSTREAM = 'upstreams:\n  - name: crm\n    url: http://127.0.0.1:3001/mcp\n';

function parse(text: string, env: NodeJS.ProcessEnv = {}) {
  return parseConfigText(text, { fileName: 'gatehouse.yaml', baseDir: tmpdir(), env });
}

/** Parses text that must be invalid and returns its issues (checking the message lists them all). */
function issuesOf(text: string, env: NodeJS.ProcessEnv = {}): ConfigIssue[] {
  try {
    parse(text, env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    const lines = err.message.split('\n');
    assert.equal(lines.length, err.issues.length);
    err.issues.forEach((i, n) => assert.equal(lines[n], `${i.file}:${i.line}:${i.column} ${i.path}: ${i.message}`));
    return err.issues;
  }
  assert.fail('expected the config to be rejected');
}

const lines = (issues: ConfigIssue[]) => issues.map((i) => `${i.file}:${i.line}:${i.column} ${i.path}: ${i.message}`);

describe('parseConfigText', () => {
  it('locates an unknown key at the key itself, with its path', () => {
    const issues = issuesOf(`listen:\n  host: 127.0.0.1\n  prot: 8080\n${UPSTREAM}`);
    assert.deepEqual(issues, [{ file: 'gatehouse.yaml', line: 3, column: 3, path: 'listen.prot', message: 'unknown key; did you mean port?' }]);
  });

  it('refuses an upstream pool keepAliveTimeoutMs of 0, which undici refuses on every request ("invalid keepAliveTimeout")', () => {
    const text = ['upstreams:', '  - name: crm', '    url: http://127.0.0.1:3001/mcp', '    pool: { keepAliveTimeoutMs: 0 }'].join('\n');
    const issues = issuesOf(text);
    assert.equal(issues.length, 1);
    assert.equal(issues[0]!.path, 'upstreams[0].pool.keepAliveTimeoutMs');
    assert.equal(issues[0]!.message, 'must be at least 1');
  });

  it('reports several errors at once, in source order', () => {
    const text = [
      'listen: { port: "8080", path: mcp }', // 1
      'upstreams:', // 2
      '  - name: crm', // 3
      '    url: http://127.0.0.1:3001/mcp', // 4
      '    tiemouts: {}', // 5
      'log: { level: verbose }', // 6
      'bogus: 1', // 7
    ].join('\n');
    assert.deepEqual(lines(issuesOf(text)), [
      'gatehouse.yaml:1:17 listen.port: expected an integer, got a string',
      'gatehouse.yaml:1:31 listen.path: must start with "/"',
      'gatehouse.yaml:5:5 upstreams[0].tiemouts: unknown key; did you mean timeouts?',
      'gatehouse.yaml:6:15 log.level: must be one of: debug, info, warn, error',
      'gatehouse.yaml:7:1 bogus: unknown key',
    ]);
  });

  it('locates YAML syntax errors and reports nothing else', () => {
    assert.deepEqual(lines(issuesOf(`listen: [8080\n${UPSTREAM}`)), [
      'gatehouse.yaml:2:1 (root): YAML syntax error: Flow sequence in block collection must be sufficiently indented and end with a ]',
    ]);
    // yaml reports this one mistake twice on the same line; one report is enough.
    const issues = issuesOf(`listen:\n  port: 8080\n   host: x\n${UPSTREAM}`);
    assert.equal(issues.length, 1);
    assert.match(issues[0]!.message, /^YAML syntax error: /);
    assert.equal(issues[0]!.line, 2);
    assert.equal(issuesOf('a: 1\na: 2\n')[0]!.message, 'YAML syntax error: duplicate key');
  });

  it('names the expected and the actual type, never the value', () => {
    const issues = issuesOf(`${UPSTREAM}auth: { anonymous: "yes" }\nmetrics:\n`);
    assert.deepEqual(lines(issues), [
      'gatehouse.yaml:4:20 auth.anonymous: expected true or false, got a string: write true or false (YAML 1.2 reads yes, no, on and off as strings)',
      'gatehouse.yaml:5:1 metrics: expected a mapping (key: value), got an empty value',
    ]);
  });

  it('requires upstreams, and at least one', () => {
    assert.deepEqual(lines(issuesOf('listen: { port: 0 }\n')), ['gatehouse.yaml:1:1 (root): missing required key "upstreams"']);
    assert.deepEqual(lines(issuesOf('upstreams: []\n')), ['gatehouse.yaml:1:12 upstreams: must not be empty']);
    assert.deepEqual(lines(issuesOf('# nothing here\n')), ['gatehouse.yaml:1:1 (root): the configuration is empty; at least "upstreams" is required']);
  });

  it('gives one clear message for an upstream with both url and command, or neither', () => {
    const both = 'upstreams:\n  - name: x\n    url: http://a/mcp\n    command: [node]\n    headers: { A: b }\n    timeouts: { connectMs: 5 }\n';
    assert.deepEqual(lines(issuesOf(both)), [
      'gatehouse.yaml:2:5 upstreams[0]: an upstream needs either "url" (Streamable HTTP) or "command" (stdio), not both',
    ]);
    // A key neither kind knows is still worth reporting; `env` (a stdio key) is not.
    const neither = 'upstreams:\n  - name: x\n    env: { A: b }\n    cmd: [node]\n';
    assert.deepEqual(lines(issuesOf(neither)), [
      'gatehouse.yaml:2:5 upstreams[0]: an upstream needs either "url" (Streamable HTTP) or "command" (stdio)',
      'gatehouse.yaml:4:5 upstreams[0].cmd: unknown key',
    ]);
  });

  it('reports one message per mistake in an upstream item', () => {
    assert.deepEqual(lines(issuesOf('upstreams:\n  - 5\n  - name: "bad name"\n    command: node\n')), [
      'gatehouse.yaml:2:5 upstreams[0]: expected a mapping (key: value), got a number',
      'gatehouse.yaml:3:11 upstreams[1].name: must be 1-32 letters, digits, "_" or "-"',
      'gatehouse.yaml:4:14 upstreams[1].command: expected a list, got a string',
    ]);
  });

  it('rejects duplicate upstream names at the repeat', () => {
    const text = `${UPSTREAM}  - name: files\n    command: [node]\n  - name: crm\n    command: [node]\n`;
    assert.deepEqual(lines(issuesOf(text)), ['gatehouse.yaml:6:11 upstreams[2].name: duplicate upstream name; upstreams[0] already uses it']);
  });

  it('locates mistakes in policy entries by line and column', () => {
    const text = `${UPSTREAM}policy:\n  budgets:\n    - { id: daily, per: subject, window: week, limit: 10 }\n  rateLimits:\n    - { id: x, per: key, rate: 0 }\n`;
    assert.deepEqual(lines(issuesOf(text)), [
      'gatehouse.yaml:6:42 policy.budgets[0].window: must be one of: minute, hour, day, month',
      'gatehouse.yaml:8:32 policy.rateLimits[0].rate: must be > 0',
    ]);
  });

  it('checks kind-specific store keys', () => {
    assert.deepEqual(lines(issuesOf(`${UPSTREAM}store: { kind: redis }\n`)), ['gatehouse.yaml:4:8 store: missing required key "url"']);
    assert.deepEqual(lines(issuesOf(`${UPSTREAM}store: { kind: mongo }\n`)), ['gatehouse.yaml:4:16 store.kind: must be one of: sqlite, redis']);
    assert.deepEqual(parse(`${UPSTREAM}store: { kind: redis, url: "redis://r:6379" }\n`).store, { kind: 'redis', url: 'redis://r:6379', keyPrefix: 'gatehouse:', commandTimeoutMs: 2000 });
    assert.deepEqual(lines(issuesOf(`${UPSTREAM}store: { kind: redis, url: "redis://r:6379", keyPrefix: "a{b}" }\n`)).length, 1, 'braces in the prefix would break hash tags');
    assert.equal(lines(issuesOf(`${UPSTREAM}store: { kind: redis, url: "redis://r:6379", sentinel: { name: m, nodes: ["s:26379"] }, cluster: { nodes: ["c:6379"] } }\n`)).length > 0, true, 'sentinel and cluster exclude each other');
  });

  // Until 5 December store.sentinel.nodes had no bound: the store may ask every sentinel, and doctor opens a
  // connection to each at once, so a generated or mistaken list could open any number of them.
  it('refuses more than 16 sentinels in store.sentinel.nodes, and takes 16', () => {
    const sentinels = (n: number): string => `${UPSTREAM}store:\n  kind: redis\n  url: "redis://r:6379"\n  sentinel:\n    name: m\n    nodes: [${Array.from({ length: n }, (_, i) => `"s${i}:26379"`).join(', ')}]\n`;
    assert.deepEqual(lines(issuesOf(sentinels(17))), ['gatehouse.yaml:9:12 store.sentinel.nodes: must have at most 16 items']);
    const store = parse(sentinels(16)).store;
    assert.equal(store.kind === 'redis' ? store.sentinel?.nodes.length : store.kind, 16);
  });

  // Until 5 December store.cluster.nodes had no bound: a seed list is tried node by node until one answers, so
  // a generated or mistaken list of any length was taken and walked.
  it('refuses more than 32 seeds in store.cluster.nodes, and takes 32', () => {
    const seeds = (n: number): string => `${UPSTREAM}store:\n  kind: redis\n  url: "redis://r:6379"\n  cluster:\n    nodes: [${Array.from({ length: n }, (_, i) => `"c${i}:6379"`).join(', ')}]\n`;
    assert.deepEqual(lines(issuesOf(seeds(33))), ['gatehouse.yaml:8:12 store.cluster.nodes: must have at most 32 items']);
    const store = parse(seeds(32)).store;
    assert.equal(store.kind === 'redis' ? store.cluster?.nodes.length : store.kind, 32);
  });

  // Until 5 December the config's maps had no bound either (headers, env, timeouts.tools, arguments): each
  // now has a maxProperties, reported at the map like a list's maxItems.
  it('refuses a map past its bound at the map, in words, and takes one at it', () => {
    const headers = (n: number): string => `upstreams:\n  - name: crm\n    url: http://127.0.0.1:3001/mcp\n    headers: { ${Array.from({ length: n }, (_, i) => `X-H${i}: v`).join(', ')} }\n`;
    assert.deepEqual(lines(issuesOf(headers(65))), ['gatehouse.yaml:4:14 upstreams[0].headers: must have at most 64 keys']);
    const up = parse(headers(64)).upstreams[0];
    assert.equal(up !== undefined && !isStdioUpstream(up) ? Object.keys(up.headers).length : 0, 64);
  });

  it('refuses a list past its bound deep in the policy, located at that list', () => {
    const tools = Array.from({ length: 4097 }, (_, i) => `"crm/t${i}"`).join(', ');
    assert.deepEqual(lines(issuesOf(`${UPSTREAM}policy:\n  rules:\n    - { id: r, access: allow, tools: [${tools}] }\n`)), ['gatehouse.yaml:6:38 policy.rules[0].tools: must have at most 4096 items']);
  });

  // Until 5 December the schema's strings had no bound: a tool glob, host or header of megabytes was taken,
  // held, and matched against. Each now has a maxLength, reported at the string (or key) with the limit.
  it('refuses a string past its bound at its place, with the limit, and takes one at it', () => {
    const rule = (glob: string): string => `${UPSTREAM}policy:\n  rules:\n    - id: r\n      access: allow\n      tools: ["${glob}"]\n`;
    assert.deepEqual(lines(issuesOf(rule('t'.repeat(1025)))), ['gatehouse.yaml:8:15 policy.rules[0].tools[0]: must have at most 1024 characters']);
    assert.equal(parse(rule('t'.repeat(1024))).policy.rules[0]!.tools?.[0]?.length, 1024);
    assert.deepEqual(lines(issuesOf(`listen: { host: ${'h'.repeat(254)} }\n${UPSTREAM}`)), ['gatehouse.yaml:1:17 listen.host: must have at most 253 characters']);
  });

  it('refuses a map key past its bound at the key', () => {
    const text = `${UPSTREAM}    headers: { ${'X'.repeat(257)}: v }\n`;
    assert.deepEqual(lines(issuesOf(text)), ['gatehouse.yaml:4:16 upstreams[0].headers.' + 'X'.repeat(257) + ': must have at most 256 characters']);
  });

  it('measures an interpolated value as read, and does not quote it back', () => {
    const token = 'x'.repeat(65537);
    const issues = issuesOf(`${UPSTREAM}    headers: { Authorization: "\${env:TOKEN}" }\n`, { TOKEN: token });
    assert.deepEqual(lines(issues), ['gatehouse.yaml:4:31 upstreams[0].headers.Authorization: must have at most 65536 characters']);
  });

  it('applies every default', () => {
    assert.deepEqual(parse(`upstreams:\n  - { name: a, url: "https://a.example/mcp" }\n  - { name: b, command: [node, s.js] }\n`), {
      listen: { host: '127.0.0.1', port: 8080, path: '/mcp', allowedHosts: [], allowedOrigins: [], maxBodyBytes: 1048576, maxJsonDepth: 64, requestTimeoutMs: 30000, headersTimeoutMs: 10000, keepAliveTimeoutMs: 65000, maxConnectionsPerIp: 256, trustedProxies: [] },
      upstreams: [
        { name: 'a', url: 'https://a.example/mcp', transport: 'auto', maxSessions: 32, era: 'auto', headers: {}, timeouts: { connectMs: 2000, headersMs: 60000, bodyMs: 300000, pingMs: 30000, callMs: 1800000, tools: {} }, pool: { connections: 64, keepAliveTimeoutMs: 30000 }, maxMessageBytes: 16777216, uriPrefixes: [] },
        { name: 'b', command: ['node', 's.js'], env: {}, era: 'auto', timeouts: { requestMs: 60000, tools: {} }, maxSessions: 32, processes: 'shared', restart: { attempts: 6, firstDelayMs: 250 }, maxMessageBytes: 16777216, uriPrefixes: [] },
      ],
      sessions: { idleTimeoutMs: 1800000, max: 1000, maxSsePerCaller: 16, inputTimeoutMs: 300000, requestStateTtlMs: 900000 },
      auth: { anonymous: false, apiKeys: [], apiKeyPrefixes: [], queryCredentialNames: [], requiredScopes: [], failureLimit: { attempts: 20, windowSeconds: 60 } },
      tools: { naming: { prefix: 'auto' }, outputValidation: 'warn', pinning: 'warn', pinningReviewers: [], uncheckableSchemas: 'refuse' },
      policy: { rules: [], egress: [], egressProxy: { enabled: false, host: '127.0.0.1', port: 3128 }, rateLimits: [], budgets: [], breakers: [], approvals: [] },
      store: { kind: 'sqlite', path: './data/gatehouse.db' },
      audit: { enabled: true, retainDays: 90 },
      idempotency: { requireKeys: true, ttlSeconds: 86400, tools: [], exempt: [] },
      approvals: { maxPendingPerCaller: 20 },
      metrics: { enabled: false, host: '127.0.0.1', port: 9464, path: '/metrics' },
      tracing: { enabled: false, sampleRatio: 1 },
      admin: { enabled: false, host: '127.0.0.1', port: 9465, groups: [] },
      log: { level: 'info', format: 'auto', requests: true },
      shutdown: { delayMs: 0, graceMs: 10000 },
    });
  });

  it('accepts port 0 and rejects ports out of range', () => {
    assert.equal(parse(`listen: { port: 0 }\n${UPSTREAM}`).listen.port, 0);
    assert.deepEqual(lines(issuesOf(`listen: { port: 65536 }\n${UPSTREAM}`)), ['gatehouse.yaml:1:17 listen.port: must be at most 65535']);
  });

  it('bounds approvals.maxPendingPerCaller between 1 and 1000, 20 by default', () => {
    assert.equal(parse(UPSTREAM).approvals.maxPendingPerCaller, 20);
    assert.equal(parse(`${UPSTREAM}approvals: { maxPendingPerCaller: 1 }\n`).approvals.maxPendingPerCaller, 1);
    assert.equal(parse(`${UPSTREAM}approvals: { maxPendingPerCaller: 1000 }\n`).approvals.maxPendingPerCaller, 1000);
    assert.deepEqual(lines(issuesOf(`${UPSTREAM}approvals: { maxPendingPerCaller: 0 }\n`)), ['gatehouse.yaml:4:35 approvals.maxPendingPerCaller: must be at least 1']);
    assert.deepEqual(lines(issuesOf(`${UPSTREAM}approvals: { maxPendingPerCaller: 1001 }\n`)), ['gatehouse.yaml:4:35 approvals.maxPendingPerCaller: must be at most 1000']);
    assert.equal(lines(issuesOf(`${UPSTREAM}approvals: { maxPendingPerCaller: 2.5 }\n`)).length, 1, 'a whole number');
    assert.equal(lines(issuesOf(`${UPSTREAM}approvals: { maxPendingPerCaller: "20" }\n`)).length, 1, 'a number, not a string');
    assert.deepEqual(lines(issuesOf(`${UPSTREAM}approvals: { maxPending: 5 }\n`)), ['gatehouse.yaml:4:14 approvals.maxPending: unknown key']);
  });

  it('bounds upstreams[].maxMessageBytes between 64 KiB and 256 MiB', () => {
    assert.equal(parse(`upstreams:\n  - { name: a, url: "https://a.example/mcp", maxMessageBytes: 67108864 }\n`).upstreams[0]!.maxMessageBytes, 67108864);
    assert.deepEqual(lines(issuesOf(`upstreams:\n  - { name: a, command: [node], maxMessageBytes: 1000 }\n`)), ['gatehouse.yaml:2:50 upstreams[0].maxMessageBytes: must be at least 65536']);
    assert.deepEqual(lines(issuesOf(`upstreams:\n  - { name: a, url: "https://a.example/mcp", maxMessageBytes: 1073741824 }\n`)), ['gatehouse.yaml:2:63 upstreams[0].maxMessageBytes: must be at most 268435456']);
  });

  it('quotes keys that would make the path ambiguous', () => {
    const issues = issuesOf('upstreams:\n  - name: a\n    url: http://a/mcp\n    headers: { "bad key": x }\n');
    assert.deepEqual(lines(issues), ['gatehouse.yaml:4:16 upstreams[0].headers["bad key"]: is not a valid HTTP header name']);
  });
});

describe('validateConfigObject', () => {
  it('applies defaults to a copy and locates issues at 0:0', () => {
    const raw = { upstreams: [{ name: 'cli', url: 'http://127.0.0.1:3001/mcp' }] };
    const config = validateConfigObject(raw);
    assert.equal(config.listen.port, 8080);
    assert.deepEqual(raw, { upstreams: [{ name: 'cli', url: 'http://127.0.0.1:3001/mcp' }] });
    assert.throws(() => validateConfigObject({ upstreams: [{ name: 'cli', url: 'ftp://x' }], listen: { port: -1 } }, 'flags'), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.deepEqual(err.message.split('\n').sort(), ['flags:0:0 listen.port: must be at least 0', 'flags:0:0 upstreams[0].url: must be an http:// or https:// URL']);
      return true;
    });
  });
});

describe('policy rules', () => {
  it('onMissingScopes: challenge needs an allow rule with scopes', () => {
    const config = (rule: Record<string, unknown>) => ({ upstreams: [{ name: 'u', url: 'http://127.0.0.1:1/mcp' }], policy: { rules: [rule] } });
    assert.throws(() => validateConfigObject(config({ access: 'allow', onMissingScopes: 'challenge', tools: ['*'] }), 'flags'), /policy\.rules\[0\]: missing required key "scopes"/);
    assert.throws(() => validateConfigObject(config({ access: 'deny', scopes: ['w'], onMissingScopes: 'challenge', tools: ['*'] }), 'flags'), /policy\.rules\[0\]\.access: must be "allow"/);
    assert.equal(validateConfigObject(config({ access: 'allow', scopes: ['w'], onMissingScopes: 'challenge', tools: ['*'] })).policy.rules[0]!.onMissingScopes, 'challenge');
    assert.equal(validateConfigObject(config({ access: 'allow', scopes: ['w'], tools: ['*'] })).policy.rules[0]!.onMissingScopes, undefined, 'hide, with no default written in: the policy version of existing rules stays the same');
  });
});

describe('loadConfigFile', () => {
  const dirs: string[] = [];
  after(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

  it('labels issues with the file name and resolves ${file:...} next to the file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-config-'));
    dirs.push(dir);
    await writeFile(join(dir, 'token.txt'), 's3cret\n');
    await writeFile(join(dir, 'gatehouse.yaml'), `${UPSTREAM}    headers: { Authorization: "Bearer \${file:token.txt}" }\n`);
    const config = await loadConfigFile(join(dir, 'gatehouse.yaml'), {});
    const [crm] = config.upstreams;
    assert.ok(crm && !isStdioUpstream(crm));
    assert.deepEqual(crm.headers, { Authorization: 'Bearer s3cret' });
    await writeFile(join(dir, 'bad.yaml'), 'upstreams: 5\n');
    // Issues name the file as given, so a terminal or editor can open it.
    await assert.rejects(loadConfigFile(join(dir, 'bad.yaml'), {}), { message: `${join(dir, 'bad.yaml')}:1:12 upstreams: expected a list, got a number` });
    await assert.rejects(loadConfigFile(join(dir, 'missing.yaml')), { message: `${join(dir, 'missing.yaml')}: no such file (give the path of a YAML config file; ${fileURLToPath(new URL('../../../config/gatehouse.example.yaml', import.meta.url))} is a start)` });
    await assert.rejects(loadConfigFile(dir), { message: `${dir}: this is a directory, not a config file` });
  });

  // Until 5 December the config file and each ${file:...} were read whole, whatever their size: a path to a
  // huge file was held in memory before any check. Each is now refused past its limit, by name, unread.
  it('refuses a config file past 4 MiB, naming the file and the limit', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-config-'));
    dirs.push(dir);
    const file = join(dir, 'huge.yaml');
    await writeFile(file, UPSTREAM);
    await truncate(file, 4 * 1024 * 1024 + 1);
    await assert.rejects(loadConfigFile(file, {}), { message: `${file}: larger than 4 MiB (4194304 bytes), the most a config file may hold` });
  });

  it('refuses a ${file:...} past 2 MiB at the key that reads it, naming the path and the limit', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-config-'));
    dirs.push(dir);
    await writeFile(join(dir, 'token.txt'), 'x');
    await truncate(join(dir, 'token.txt'), 2 * 1024 * 1024 + 1);
    await writeFile(join(dir, 'gatehouse.yaml'), `${UPSTREAM}    headers: { Authorization: "\${file:token.txt}" }\n`);
    await assert.rejects(loadConfigFile(join(dir, 'gatehouse.yaml'), {}), {
      message: `${join(dir, 'gatehouse.yaml')}:4:31 upstreams[0].headers.Authorization: file "token.txt" is larger than 2 MiB (2097152 bytes), the most a \${file:...} may read`,
    });
  });

  // A PEM read through ${file:...} is validated as read: the bound on store.tls.ca must hold a real bundle
  // (Node's own roots, over 200 KB, well past the 64 KiB a secret string may have).
  it('takes a real-sized PEM chain read through ${file:...} as store.tls.ca', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-config-'));
    dirs.push(dir);
    const bundle = `${rootCertificates.join('\n')}\n`;
    assert.ok(bundle.length > 65536, String(bundle.length));
    await writeFile(join(dir, 'ca.pem'), bundle);
    await writeFile(join(dir, 'gatehouse.yaml'), `${UPSTREAM}store:\n  kind: redis\n  url: "rediss://r:6379"\n  tls:\n    ca: "\${file:ca.pem}"\n`);
    const { store } = await loadConfigFile(join(dir, 'gatehouse.yaml'), {});
    assert.equal(store.kind === 'redis' ? store.tls?.ca : store.kind, bundle.trimEnd());
  });
});
