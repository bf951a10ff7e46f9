// A stdio upstream whose `cwd` is wrong (a typo, a directory not yet mounted). Node reports a missing working
// directory as ENOENT of the command, so `gatehouse doctor` said `"node server.js" could not be started:
// spawn node ENOENT` with the hint to check upstreams[0].command: node was there; the directory was not. Both
// the finding and its hint now name the working directory (and a cwd that is a file, which Node reported as
// a bare ENOTDIR "cannot be passed to a process").

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT, runCli } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-stdio-cwd-'));

interface Row {
  check: string;
  verdict: string;
  detail: string;
  hint?: string;
}

async function doctor(cwd: string, command = [process.execPath, 'server.js'], code = 1): Promise<Row> {
  const file = join(dir, `cwd-${Math.random().toString(36).slice(2)}.yaml`);
  const config = {
    listen: { host: '127.0.0.1', port: 0 },
    auth: { anonymous: true },
    store: { path: join(dir, 'g.db') },
    upstreams: [{ name: 'everything', command, cwd }],
  };
  writeFileSync(file, JSON.stringify(config));
  const r = await runCli(['doctor', '--config', file, '--json', '--skip', 'store', '--skip', 'ports']);
  assert.equal(r.code, code, r.stdout + r.stderr);
  const rows = (JSON.parse(r.stdout) as { checks: Row[] }).checks;
  const row = rows.find((c) => c.check === 'upstream everything');
  assert.ok(row, r.stdout);
  return row;
}

describe('a stdio upstream whose working directory is wrong', () => {
  it('is named as the working directory, not as a command that was not found', async () => {
    const row = await doctor(join(dir, 'not-there'));
    assert.equal(row.verdict, 'fail');
    assert.match(row.detail, /could not be started: its working directory \(cwd\) does not exist/);
    assert.doesNotMatch(row.detail, /ENOENT/);
    assert.match(row.hint ?? '', /upstreams\[0\]\.cwd/);
  });

  it('says so when the working directory is a file', async () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    const row = await doctor(file);
    assert.equal(row.verdict, 'fail');
    assert.match(row.detail, /could not be started: its working directory \(cwd\) is not a directory/);
    assert.match(row.hint ?? '', /upstreams\[0\]\.cwd/);
  });
});

describe('a relative program path with cwd set', () => {
  // docs/configuration.md said of `command`: "relative paths resolve against the gateway's working
  // directory". With cwd set, the program is found from cwd (the child is started there), as are the
  // relative paths among its arguments; the description now says so. doctor runs from the repository root.
  it('is found from cwd, not from where Gatehouse runs', async () => {
    const server = join(ROOT, 'test/fixtures/upstreams/modern-stdio-server.mjs');
    writeFileSync(join(dir, 'modern-server.sh'), `#!/bin/sh\nexec "${process.execPath}" "${server}"\n`, { mode: 0o755 });
    assert.ok(!existsSync(join(ROOT, 'modern-server.sh')), 'not there where Gatehouse runs');
    const fromCwd = await doctor(dir, ['./modern-server.sh'], 0);
    assert.equal(fromCwd.verdict, 'ok', fromCwd.detail);
  });
});
