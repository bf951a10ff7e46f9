// Mistakes an operator plausibly makes in a first config file, as `gatehouse check-config` (the built
// dist/main.js) reports them: each one must be named where it is, in words that say what to do, with exit 1,
// and never be accepted in silence.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runCli } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-mistakes-'));
const UPSTREAM = 'upstreams:\n  - name: app\n    url: http://127.0.0.1:3001/mcp\nauth: { anonymous: true }\n';

function write(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

describe('a number or a switch read through ${env:...}', () => {
  // docs/configuration.md: interpolation fills string values. `port: ${env:PORT}` (the Kubernetes habit) read
  // "9000" and was refused as "expected an integer, got a string", which reads as if the variable held no
  // number; the message now says why a value read so is a string, and how to give the number.
  it('says that a value read through ${env:...} is a string, and what to write instead', async () => {
    const file = write('env-port.yaml', `listen:\n  port: \${env:GH_TEST_PORT}\nmetrics:\n  enabled: "\${env:GH_TEST_METRICS}"\n${UPSTREAM}`);
    const r = await runCli(['check-config', file], { env: { PATH: process.env.PATH, GH_TEST_PORT: '9000', GH_TEST_METRICS: 'true' } });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /:2:9 listen\.port: expected an integer, got a string: a value read through \$\{env:\.\.\.\} or \$\{file:\.\.\.\} is always a string; write the integer itself here/);
    assert.match(r.stderr, /:4:12 metrics\.enabled: expected true or false, got a string: a value read through \$\{env:\.\.\.\} or \$\{file:\.\.\.\} is always a string; write true or false itself here/);
    // A literal string where a number belongs is the plain type error, with no word of interpolation.
    const quoted = write('quoted-port.yaml', `listen:\n  port: "9000"\n${UPSTREAM}`);
    const q = await runCli(['check-config', quoted]);
    assert.equal(q.code, 1);
    assert.match(q.stderr, /listen\.port: expected an integer, got a string\n/);
  });
});

describe('a tool ref naming an upstream that is not configured', () => {
  // Tool refs are upstream/name (README §Who sees what). A rule whose upstream part names no upstream (a typo,
  // an upstream renamed or removed) can never match: a deny rule then denies nothing, an approval rule lets
  // its calls run unapproved, a limit limits nothing; and check-config said "ok". It is refused now, naming
  // the entry and the upstreams there are; globs over upstream names (`*/delete_*`, `*`) still pass.
  it('is refused with exit 1, naming the ref, the key and the configured upstreams', async () => {
    const file = write('unknown-upstream.yaml', [
      UPSTREAM,
      'policy:',
      '  rules:',
      '    - { id: no-deletes, access: deny, tools: ["CRM/delete_*"] }',
      '    - { id: everyone, access: allow, tools: ["*"], prompts: ["*/summary"] }',
      '  approvals:',
      '    - { id: refunds, tools: ["app/refund", "billing/refund"] }',
      '  rateLimits:',
      '    - { id: search, per: key, tools: ["search"], rate: 1 }',
      'idempotency:',
      '  exempt: ["apps/log_view"]',
      'admin: { enabled: true, token: "0123456789abcdef" }',
      '',
    ].join('\n'));
    const r = await runCli(['check-config', file]);
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stderr, /policy\.rules\[0\]\.tools\[0\]: "CRM\/delete_\*" names the upstream "CRM", which is not configured \(upstreams: app\); tool refs are upstream\/name/);
    assert.match(r.stderr, /policy\.approvals\[0\]\.tools\[1\]: "billing\/refund" names the upstream "billing"/);
    assert.match(r.stderr, /policy\.rateLimits\[0\]\.tools\[0\]: "search" names no upstream; tool refs are upstream\/name \(app\/search\)/);
    assert.match(r.stderr, /idempotency\.exempt\[0\]: "apps\/log_view" names the upstream "apps"/);
    assert.doesNotMatch(r.stderr, /policy\.rules\[1\]|approvals\[0\]\.tools\[0\]/, 'globs and refs of a configured upstream pass');
  });

  it('covers the keys\' tool lists, and every shipped example names only its own upstreams', async () => {
    const file = write('key-tools.yaml', `upstreams:\n  - name: crm\n    url: http://127.0.0.1:3001/mcp\nauth:\n  apiKeys:\n    - { id: bot, hash: "sha256:${'0'.repeat(64)}", tools: ["crm/search", "cmr/get_contact"] }\n`);
    const r = await runCli(['check-config', file]);
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stderr, /auth\.apiKeys\[0\]\.tools\[1\]: "cmr\/get_contact" names the upstream "cmr", which is not configured \(upstreams: crm\)/);
    const example = await runCli(['check-config', '--env-optional', 'config/gatehouse.example.yaml'], { env: { PATH: process.env.PATH } });
    assert.equal(example.code, 0, example.stderr);
  });
});

describe('YAML anchors, aliases and merge keys', () => {
  // Aliases (`headers: *common`) were read, but the merge key that goes with them (`<<: *defaults`, the usual
  // way to share settings between upstreams) was taken for a key named "<<": check-config said `["<<"]:
  // unknown key` and that the upstream needed a url or a command, which it had, through the merge.
  it('takes `<<: *anchor` as the merge it is, and checks what it merged', async () => {
    const file = write('merge.yaml', [
      'upstreams:',
      '  - &crm',
      '    name: crm',
      '    url: http://127.0.0.1:3001/mcp',
      '    timeouts: &slow { connectMs: 500, callMs: 60000 }',
      '  - <<: *crm',
      '    name: crm-eu',
      '    timeouts: { <<: *slow, connectMs: 900 }',
      'auth: { anonymous: true }',
      '',
    ].join('\n'));
    const r = await runCli(['check-config', file]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `${file}: ok\n`);
    // What a merge brings in is checked like anything written out: here, a second upstream named crm.
    const same = write('merge-same-name.yaml', 'upstreams:\n  - &crm\n    name: crm\n    url: http://127.0.0.1:3001/mcp\n  - <<: *crm\n    url: http://127.0.0.1:3002/mcp\nauth: { anonymous: true }\n');
    const dup = await runCli(['check-config', same]);
    assert.equal(dup.code, 1);
    assert.match(dup.stderr, /upstreams\[1\]\.name: duplicate upstream name; upstreams\[0\] already uses it/);
  });
});

describe('an alias whose anchor is not defined before it', () => {
  // yaml throws on such an alias when the tree is read, and the message went out located at the start of
  // the file, `(root)`: `c.yaml:1:1 (root): Unresolved alias (the anchor must be set before the alias):
  // hdrs`. A misspelt anchor, or one written after its alias, is now named where the alias is.
  it('is located at the alias, with its key path', async () => {
    const file = write('alias.yaml', 'upstreams:\n  - name: a\n    url: http://127.0.0.1:3001/mcp\n    headers: *hdrs\n  - name: b\n    url: http://127.0.0.1:3002/mcp\n    headers: &hdrs { X-Team: core }\nauth: { anonymous: true }\n');
    const r = await runCli(['check-config', file]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /alias\.yaml:4:14 upstreams\[0\]\.headers: the alias \*hdrs names no anchor defined before it; write &hdrs on the value to share, above its first alias\n/);
    assert.doesNotMatch(r.stderr, /:1:1 \(root\)/);
  });
});

describe('problems found beyond the schema are located like the schema\'s', () => {
  // README §CLI: check-config "prints every problem as FILE:LINE:COL key.path: message". The checks that relate
  // keys (anonymous access off loopback, a ref naming no upstream, two listeners on one port) printed
  // "FILE: valid, but this build cannot serve it:" and then bare "key.path: message" lines, and serve printed
  // them without even the file; in a long file the operator had to find the key by hand.
  const text = [
    'listen:',
    '  host: 0.0.0.0',
    '  port: 0',
    UPSTREAM.trimEnd(),
    'policy:',
    '  rules:',
    '    - { id: everyone, access: allow, tools: ["ap/*"] }',
    '',
  ].join('\n');

  it('check-config prints FILE:LINE:COL key.path: message for each, and exits 1', async () => {
    const file = write('semantic.yaml', text);
    const r = await runCli(['check-config', file]);
    assert.equal(r.code, 1);
    const lines = r.stderr.trimEnd().split('\n');
    assert.deepEqual(lines.map((l) => l.slice(0, l.indexOf(': '))), [`${file}:7:20 auth.anonymous`, `${file}:10:46 policy.rules[0].tools[0]`]);
    assert.match(lines[0]!, /: anonymous access is allowed only on a loopback listener, not on "0\.0\.0\.0"$/);
  });

  it('serve says the same, and starts nothing', async () => {
    const file = write('semantic-serve.yaml', text);
    const r = await runCli(['serve', '--config', file]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:7:20 auth\\.anonymous: anonymous access`, 'm'));
    assert.match(r.stderr, /:10:46 policy\.rules\[0\]\.tools\[0\]: "ap\/\*" names the upstream "ap"/);
    assert.doesNotMatch(r.stderr, /listening/);
  });

  it('doctor\'s config rows carry the same locations', async () => {
    const file = write('semantic-doctor.yaml', text);
    const r = await runCli(['doctor', '--config', file, '--json', '--skip', 'upstreams', '--skip', 'store', '--skip', 'ports']);
    assert.equal(r.code, 1);
    const rows = (JSON.parse(r.stdout) as { checks: Array<{ check: string; verdict: string; detail: string }> }).checks.filter((c) => c.check === 'config');
    assert.deepEqual(rows.map((c) => [c.verdict, c.detail.slice(0, c.detail.indexOf(': '))]), [['fail', `${file}:7:20 auth.anonymous`], ['fail', `${file}:10:46 policy.rules[0].tools[0]`]]);
  });
});

describe('a relative ${file:...} path that is not there', () => {
  // docs/configuration.md: ${file:PATH} is relative to the config file. Run from elsewhere
  // (`serve --config /etc/gatehouse/gatehouse.yaml` in a home directory), `${file:secrets/token}` said
  // `no such file: "secrets/token"` while ./secrets/token was right there; where it was looked for now shows.
  it('says where it was looked for, and that relative paths start at the config file', async () => {
    const file = write('rel-secret.yaml', `upstreams:\n  - name: app\n    url: http://127.0.0.1:3001/mcp\n    headers: { Authorization: "\${file:secrets/token}" }\nauth: { anonymous: true }\n`);
    const r = await runCli(['check-config', file]);
    assert.equal(r.code, 1);
    assert.ok(r.stderr.includes(`upstreams[0].headers.Authorization: no such file: "secrets/token" (looked for at ${join(dir, 'secrets/token')}: a relative path starts at the config file's directory)`), r.stderr);
    const absolute = write('abs-secret.yaml', `upstreams:\n  - name: app\n    url: http://127.0.0.1:3001/mcp\n    headers: { Authorization: "\${file:${join(dir, 'nope')}}" }\nauth: { anonymous: true }\n`);
    const a = await runCli(['check-config', absolute]);
    assert.match(a.stderr, /no such file: "[^"]*nope"\n/, 'an absolute path needs no word on where it was looked for');
  });
});

describe('a serve flag value that cannot be used, where no config file is', () => {
  // README §CLI: `serve --log-level loud` is a usage error (exit 2, naming the flag). Run where there was no
  // ./gatehouse.yaml yet (the first try), it said `gatehouse.yaml: no such file` and exited 1; once the file
  // was written, the same command turned out to have a second mistake. Flags are judged before the file now.
  for (const [flag, value, said] of [['--log-level', 'loud', /^--log-level: must be one of: debug, info, warn, error$/m], ['--port', '70000', /^--port: must be at most 65535$/m], ['--path', 'mcp', /^--path: must start with "\/"$/m]] as const) {
    it(`${flag} ${value} is a usage error before the file is looked for`, async () => {
      const r = await runCli(['serve', flag, value], { env: { PATH: process.env.PATH } });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, said);
      assert.match(r.stderr, /Usage: gatehouse serve/);
      assert.doesNotMatch(r.stderr, /no such file/);
    });
  }
});

describe('access rules that deny some tools and allow none', () => {
  // README §Who sees what: once rules name a kind, anything of that kind they do not allow is hidden. A first
  // policy of one deny rule (`{ access: deny, tools: ["app/delete_*"] }`, meant as "everything but deletes")
  // therefore hid every tool from every caller (tools/list empty, /health visibleTools: 0), and check-config
  // said "ok". It is refused now, saying what to add; an explicit deny of "*" is taken as meant.
  it('is refused with the rule to add', async () => {
    const file = write('deny-only.yaml', `${UPSTREAM}policy:\n  rules:\n    - { id: no-deletes, access: deny, tools: ["app/delete_*"] }\n`);
    const r = await runCli(['check-config', file]);
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stderr, /:7:5 policy\.rules: no rule allows any tool, so every tool is hidden from every caller \(once rules name tools, what they do not allow is hidden\); add \{ access: allow, tools: \["\*"\] \} after the deny rules to let the rest through\n/);
    const withAllow = write('deny-then-allow.yaml', `${UPSTREAM}policy:\n  rules:\n    - { id: no-deletes, access: deny, tools: ["app/delete_*"] }\n    - { id: admins, groups: [admins], access: allow, tools: ["*"] }\n`);
    assert.equal((await runCli(['check-config', withAllow])).code, 0);
    const denyAll = write('deny-all.yaml', `${UPSTREAM}policy:\n  rules:\n    - { id: nothing, access: deny, tools: ["*"] }\n`);
    assert.equal((await runCli(['check-config', denyAll])).code, 0, 'a deny of "*" says what it means');
  });
});

describe('check-config --env-optional judges no secret that is absent here', () => {
  // README §CLI and the CI use of check-config: with --env-optional an absent secret is a warning, its value
  // kept as the `${...}` text. The checks that relate keys compared that text as if it were the value: an
  // OAuth audience and public URL read from two variables "must be equal", and an expiry read from one "is
  // not a real date", a proxy or egress range read from one "is not an address", so a file that serves where
  // its secrets live failed CI. Such values are not judged.
  it('exits 0 with the warnings only', async () => {
    const file = write('absent-secrets.yaml', [
      'listen: { publicUrl: "${env:GH_TEST_PUBLIC_URL}", trustedProxies: ["10.0.0.1", "${env:GH_TEST_PROXY}"] }',
      'upstreams:',
      '  - name: app',
      '    url: http://127.0.0.1:3001/mcp',
      'auth:',
      '  oauth: { issuer: "https://as.example", audience: "${env:GH_TEST_AUDIENCE}" }',
      '  apiKeys:',
      '    - { id: k, hash: "${env:GH_TEST_KEY_HASH}", expires: "${env:GH_TEST_KEY_EXPIRES}", tools: ["${env:GH_TEST_UPSTREAM}/search"] }',
      'policy:',
      '  egress: [{ id: lab, allow: { cidrs: ["${env:GH_TEST_LAB_CIDR}"] } }]',
      '',
    ].join('\n'));
    const r = await runCli(['check-config', '--env-optional', file], { env: { PATH: process.env.PATH } });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /: ok \(7 secrets not present here\)\n$/);
    for (const line of r.stderr.trimEnd().split('\n')) assert.match(line, /^warning: .*environment variable "GH_TEST_\w+" is not set$/);
    // Where the secrets are set, the same checks judge them.
    const set = await runCli(['check-config', file], { env: { PATH: process.env.PATH, GH_TEST_PUBLIC_URL: 'https://mcp.example/mcp', GH_TEST_AUDIENCE: 'https://other.example/mcp', GH_TEST_KEY_HASH: `sha256:${'0'.repeat(64)}`, GH_TEST_KEY_EXPIRES: '2027-02-30', GH_TEST_UPSTREAM: 'app', GH_TEST_PROXY: 'proxy.example', GH_TEST_LAB_CIDR: '10.20.0.0/33' } });
    assert.equal(set.code, 1);
    assert.match(set.stderr, /auth\.oauth\.audience: must equal listen\.publicUrl/);
    assert.match(set.stderr, /auth\.apiKeys\[0\]\.expires: "2027-02-30" \(key "k"\) is not a real date/);
    assert.match(set.stderr, /listen\.trustedProxies\[1\]: "proxy\.example" is not an IP address or CIDR range/);
    assert.match(set.stderr, /policy\.egress\[0\]\.allow\.cidrs\[0\]: "10\.20\.0\.0\/33"/);
  });
});

describe('a YAML scalar that is not of the type written', () => {
  // YAML reads an unquoted 2024 or 12345678901234567890 as a number, and (since YAML 1.2) yes/no/on/off as
  // strings. `name: 2024` or an all-digit admin.token said "expected a string, got a number", and
  // `anonymous: yes` "expected true or false, got a string", without the fix; the fix is now said, without
  // repeating the value (it may be a token).
  it('says to quote a number meant as a string, and to write true or false', async () => {
    const file = write('scalars.yaml', 'upstreams:\n  - name: 2024\n    url: http://127.0.0.1:3001/mcp\nauth: { anonymous: yes }\nadmin: { enabled: true, token: 12345678901234567890 }\n');
    const r = await runCli(['check-config', file]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /:2:11 upstreams\[0\]\.name: expected a string, got a number: YAML reads it as one; put the value in quotes\n/);
    assert.match(r.stderr, /:5:32 admin\.token: expected a string, got a number: YAML reads it as one; put the value in quotes\n/);
    assert.match(r.stderr, /:4:20 auth\.anonymous: expected true or false, got a string: write true or false \(YAML 1\.2 reads yes, no, on and off as strings\)\n/);
    assert.doesNotMatch(r.stderr, /12345678901234567890/);
  });
});

describe('a listener host written with a port or as a URL', () => {
  // listen.host, metrics.host, admin.host and policy.egressProxy.host name an interface; the port has a key
  // of its own. `host: "127.0.0.1:8080"` or `host: http://0.0.0.0` checked "ok" with API keys (with
  // anonymous access, check-config blamed auth.anonymous instead), and serve then failed with "getaddrinfo
  // ENOTFOUND 127.0.0.1:8080". Each is refused at its key, saying what to write.
  it('is refused at the host key, with what to write', async () => {
    const keys = `auth:\n  apiKeys: [{ id: k, hash: "sha256:${'0'.repeat(64)}" }]\n`;
    const file = write('hosts.yaml', `listen: { host: "127.0.0.1:8080" }\nupstreams:\n  - name: app\n    url: http://127.0.0.1:3001/mcp\n${keys}metrics: { enabled: true, host: "http://0.0.0.0" }\nadmin: { enabled: true, token: "0123456789abcdef", host: "[::1]" }\n`);
    const r = await runCli(['check-config', file]);
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stderr, /:1:17 listen\.host: "127\.0\.0\.1:8080" names a port; write the address alone \(127\.0\.0\.1\) and the port in listen\.port\n/);
    assert.match(r.stderr, /:7:33 metrics\.host: "http:\/\/0\.0\.0\.0" is a URL; write the interface address alone \(127\.0\.0\.1, 0\.0\.0\.0, ::1\)\n/);
    assert.match(r.stderr, /:8:58 admin\.host: "\[::1\]" is in brackets; write an IPv6 address without them \(::1\)\n/);
    const anonymous = write('host-anonymous.yaml', `listen: { host: "127.0.0.1:8080" }\n${UPSTREAM}`);
    const a = await runCli(['check-config', anonymous]);
    assert.equal(a.code, 1);
    assert.match(a.stderr, /listen\.host: "127\.0\.0\.1:8080" names a port/);
    assert.doesNotMatch(a.stderr, /auth\.anonymous/, 'the host is the mistake, not anonymous access');
    const v6 = write('host-v6.yaml', `listen: { host: "::1" }\n${UPSTREAM}`);
    assert.equal((await runCli(['check-config', v6])).code, 0);
  });
});
