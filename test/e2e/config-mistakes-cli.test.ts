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
