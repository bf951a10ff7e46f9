// `gatehouse serve` (or doctor, or check-config) where no config file is. The message pointed at
// "config/gatehouse.example.yaml is a start", a path that exists only from the root of a clone: from any other
// directory, and for a gatehouse installed from npm, it named nothing. It now names the example where it is
// (the package's own copy), and serve, which also runs without a file, says how.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { MAIN, ROOT } from '../helpers/cli.js';

const elsewhere = mkdtempSync(join(tmpdir(), 'gatehouse-no-config-'));

/** Runs the CLI from `cwd` (runCli always runs from the repository root). */
function runIn(cwd: string, args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], { cwd, env: { PATH: process.env.PATH }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += String(d)));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`did not finish: ${stderr}`));
    }, 15_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

describe('no config file where the command looks', () => {
  const example = join(ROOT, 'config/gatehouse.example.yaml');

  it('serve names the example by a path that exists from here, and the ways to run without a file', async () => {
    const r = await runIn(elsewhere, ['serve']);
    assert.equal(r.code, 1);
    assert.ok(existsSync(example));
    assert.equal(r.stderr, `gatehouse.yaml: no such file (give the path of a YAML config file; ${example} is a start)\nor run one server without a file: gatehouse serve --upstream URL, or --stdio "COMMAND ARGS"\n`);
  });

  it('check-config names the example the same way', async () => {
    const r = await runIn(elsewhere, ['check-config', 'gatehouse.yaml']);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `gatehouse.yaml: no such file (give the path of a YAML config file; ${example} is a start)\n`);
  });
});
