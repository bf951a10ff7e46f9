// Unit tests for src/config/interpolate.ts and its use by the loader: syntax, escapes, located and secret-safe errors.

import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { interpolateString, type InterpolationContext } from '../../../src/config/interpolate.js';
import { ConfigError, parseConfigText } from '../../../src/config/load.js';
import { isStdioUpstream } from '../../../src/config/types.js';

const SECRET = 'hunter2-very-secret-value';
let dir = '';
let ctx: InterpolationContext;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-interp-'));
  await writeFile(join(dir, 'secret.txt'), `${SECRET}\n\n`);
  await writeFile(join(dir, 'plain.txt'), 'no newline');
  ctx = { env: { CRM_TOKEN: SECRET, HOST: 'crm.internal', EMPTY: '', NESTED: '${env:HOST}' }, baseDir: dir };
});
after(async () => rm(dir, { recursive: true, force: true }));

describe('interpolateString', () => {
  it('substitutes env vars anywhere in a string, several per string', () => {
    assert.deepEqual(interpolateString('Bearer ${env:CRM_TOKEN}', ctx), { value: `Bearer ${SECRET}`, problems: [] });
    assert.deepEqual(interpolateString('http://${env:HOST}:80/${env:EMPTY}x', ctx), { value: 'http://crm.internal:80/x', problems: [] });
    assert.deepEqual(interpolateString('no markers here', ctx), { value: 'no markers here', problems: [] });
  });

  it('reads files relative to baseDir, trimming exactly one trailing newline', () => {
    assert.equal(interpolateString('${file:secret.txt}', ctx).value, `${SECRET}\n`);
    assert.equal(interpolateString('[${file:./plain.txt}]', ctx).value, '[no newline]');
    assert.equal(interpolateString(`\${file:${join(dir, 'plain.txt')}}`, ctx).value, 'no newline');
  });

  it('names a missing variable or unreadable file', () => {
    // An absent secret is `missing` (check-config --env-optional turns it into a warning); the rest are errors.
    assert.deepEqual(interpolateString('${env:MISSING_ONE}', ctx).problems, [{ message: 'environment variable "MISSING_ONE" is not set', missing: true }]);
    assert.deepEqual(interpolateString('${file:./nope.txt}', ctx).problems, [{ message: `no such file: "./nope.txt" (looked for at ${resolve(ctx.baseDir, './nope.txt')}: a relative path starts at the config file's directory)`, missing: true }]);
    assert.deepEqual(interpolateString('${file:.}', ctx).problems, [{ message: 'cannot read file ".": EISDIR', missing: false }]);
  });

  it('turns $${ into a literal ${ and does not expand what follows', () => {
    assert.deepEqual(interpolateString('$${env:CRM_TOKEN} and ${env:HOST}', ctx), { value: '${env:CRM_TOKEN} and crm.internal', problems: [] });
  });

  it('does not re-scan substituted values', () => {
    assert.equal(interpolateString('${env:NESTED}', ctx).value, '${env:HOST}');
  });

  it('rejects every other ${...} form', () => {
    assert.deepEqual(interpolateString('a ${foo} b', ctx).problems.map((p) => p.message), ['unknown interpolation "${foo}"; use ${env:NAME} or ${file:PATH}']);
    assert.deepEqual(interpolateString('${ENV:X}', ctx).problems.map((p) => p.message), ['unknown interpolation "${ENV:X}"; use ${env:NAME} or ${file:PATH}']);
    assert.deepEqual(interpolateString('${env:bad-name}', ctx).problems.map((p) => p.message), ['invalid environment variable name in "${env:bad-name}"; use ${env:NAME} or ${file:PATH}']);
    assert.deepEqual(interpolateString('tail ${env:X', ctx).problems.map((p) => p.message), ['unterminated "${"; write $${ for a literal "${"']);
  });
});

describe('interpolation in a config file', () => {
  const parse = (text: string) => parseConfigText(text, { fileName: 'gatehouse.yaml', baseDir: dir, env: ctx.env });
  const errorOf = (text: string): ConfigError => {
    try {
      parse(text);
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      return err;
    }
    assert.fail('expected a ConfigError');
  };

  it('interpolates values in nested maps and lists, but never keys', () => {
    const config = parse([
      'upstreams:',
      '  - name: crm',
      '    url: "http://${env:HOST}/mcp"',
      '    headers: { Authorization: "Bearer ${file:secret.txt}" }',
      '  - name: files',
      '    command: [node, "${env:HOST}"]',
      'policy: { rules: [{ access: allow, tools: ["${env:HOST}/*"] }] }',
    ].join('\n'));
    const [crm, files] = config.upstreams;
    assert.ok(crm && !isStdioUpstream(crm) && files && isStdioUpstream(files));
    assert.equal(crm.url, 'http://crm.internal/mcp');
    assert.deepEqual(crm.headers, { Authorization: `Bearer ${SECRET}\n` });
    assert.deepEqual(files.command, ['node', 'crm.internal']);
    assert.deepEqual(config.policy.rules, [{ access: 'allow', tools: ['crm.internal/*'] }]);
    // A key is never interpolated: it is reported as the unknown key it literally is.
    const err = errorOf('upstreams: [{ name: a, command: [x] }]\npolicy: { rules: [{ access: allow, tools: [x], "${env:HOST}": 1 }] }\n');
    assert.match(err.message, /policy\.rules\[0\]\["\$\{env:HOST\}"\]: unknown key/);
  });

  it('locates each problem at its scalar and reports nothing else about it', () => {
    const err = errorOf('upstreams:\n  - name: crm\n    url: "${env:CRM_URL}"\n    headers: { A: "${file:./secret-missing.txt}", B: "${nope}" }\n');
    assert.deepEqual(err.message.split('\n'), [
      'gatehouse.yaml:3:10 upstreams[0].url: environment variable "CRM_URL" is not set',
      `gatehouse.yaml:4:19 upstreams[0].headers.A: no such file: "./secret-missing.txt" (looked for at ${join(dir, 'secret-missing.txt')}: a relative path starts at the config file's directory)`,
      'gatehouse.yaml:4:54 upstreams[0].headers.B: unknown interpolation "${nope}"; use ${env:NAME} or ${file:PATH}',
    ]);
  });

  it('still reports an unknown key whose value could not be interpolated', () => {
    assert.deepEqual(errorOf('listen: { prot: "${env:NOPE}" }\nupstreams: [{ name: a, url: "http://a/mcp" }]\n').message.split('\n'), [
      'gatehouse.yaml:1:11 listen.prot: unknown key; did you mean port?',
      'gatehouse.yaml:1:17 listen.prot: environment variable "NOPE" is not set',
    ]);
  });

  it('never echoes an interpolated value in an error', () => {
    const err = errorOf([
      'listen: { port: "${env:CRM_TOKEN}", publicUrl: "${file:secret.txt}" }',
      'upstreams:',
      '  - { name: "${env:CRM_TOKEN}", url: "${env:CRM_TOKEN}" }',
      '  - { name: "${env:CRM_TOKEN}", command: [node] }',
      'admin: { token: "${env:HOST}" }',
    ].join('\n'));
    assert.equal(err.issues.length, 5);
    assert.ok(!err.message.includes(SECRET), err.message);
    assert.ok(!err.message.includes('crm.internal'), err.message);
  });
});
