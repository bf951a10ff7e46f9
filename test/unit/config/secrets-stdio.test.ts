// collectSecrets on a stdio upstream: the env values the file read through ${env:...}/${file:...} whatever
// their names, the value of a credential-named option on the command line, and a URL's password in an
// argument; not a literal env value under an ordinary name, an ordinary argument, or the option after a
// credential-named flag that takes no value.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { InterpolatedValue } from '../../../src/config/interpolate.js';
import { parseConfigText } from '../../../src/config/load.js';
import { collectSecrets } from '../../../src/config/secrets.js';

test('stdio env values read from outside the file, and credential options of the command line, are secrets', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-secrets-stdio-'));
  writeFileSync(join(dir, 'pat.txt'), 'pat-from-a-file\n');
  const text = [
    'upstreams:',
    '  - name: gh',
    '    command: [server, --token=opt-token-value, --api-key, opt-key-value, --auth-anon, --root, "${env:ROOT_DIR}", "--db=postgres://u:p%40ss-word@db/app"]',
    '    env: { GITHUB_PAT: "${file:pat.txt}", SERVICE_CRED: "x-${env:CRED}", NODE_ENV: production, LOG_DIR: "${env:ROOT_DIR}" }',
    '  - name: web',
    '    url: https://web.example.com/mcp',
    '    headers: { X-Region: "${env:REGION}" }',
    'auth: { anonymous: true }',
  ].join('\n');
  const interpolated: InterpolatedValue[] = [];
  const config = parseConfigText(text, { fileName: 'gatehouse.yaml', baseDir: dir, env: { ROOT_DIR: '/srv/root-dir', CRED: 'cred-from-env', REGION: 'eu-west-1' }, interpolated });
  assert.deepEqual(interpolated.map((i) => i.path.join('.')), ['upstreams.0.command.6', 'upstreams.0.env.GITHUB_PAT', 'upstreams.0.env.SERVICE_CRED', 'upstreams.0.env.LOG_DIR', 'upstreams.1.headers.X-Region']);
  const secrets = collectSecrets(config, interpolated);
  for (const s of ['pat-from-a-file', 'cred-from-env', '/srv/root-dir', 'opt-token-value', 'opt-key-value', 'p%40ss-word', 'p@ss-word', 'eu-west-1']) assert.ok(secrets.includes(s), `${s} missing from ${JSON.stringify(secrets)}`);
  // A literal under an ordinary name, the option after a value-less credential flag, and the program are not.
  for (const s of ['production', '--root', 'server']) assert.ok(!secrets.includes(s), `${s} in ${JSON.stringify(secrets)}`);
  // Without the interpolated values only the names and the command line tell.
  const plain = collectSecrets(config);
  assert.ok(!plain.includes('cred-from-env') && plain.includes('opt-token-value'));
});
