// `gatehouse audit export | head -5`: once the reader has gone, nothing more can be written (EPIPE), but
// export read and wrote the whole rest of the log into a closed pipe, and the shell waited for it: on a log
// of 300,000 records, 20 s after head had printed its lines; then it exited 0, as if everything had been
// written. It now stops at the first write the reader can no longer take, exit 1, and says why.

import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { MAIN, ROOT } from '../helpers/cli.js';

const RECORDS = 20_000;
let path: string;

before(async () => {
  path = join(mkdtempSync(join(tmpdir(), 'gatehouse-export-closed-')), 'audit.db');
  const store = new SqliteStore(path);
  for (let i = 1; i <= RECORDS; i += 500) {
    await Promise.all(Array.from({ length: 500 }, (_, k) => store.appendAudit({ time: new Date().toISOString(), callId: `c${i + k}`, runId: `r${i + k}`, subject: 'alice', method: 'tools/call', tool: 'lookup', arguments: { note: 'n'.repeat(200) }, outcome: 'ok', latencyMs: 1 }, 500)));
  }
  await store.close();
});

test('export stops, exit 1, when its reader closes the pipe after the first line', { timeout: 60_000 }, async () => {
  const child = spawn(process.execPath, [MAIN, 'audit', 'export', '--store', path], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += String(d)));
  let first = '';
  // As head -1 does: read up to the first line, then close the read end.
  await new Promise<void>((resolve) => {
    const onData = (d: Buffer): void => {
      first += d.toString('utf8');
      if (first.includes('\n')) {
        child.stdout.off('data', onData);
        child.stdout.destroy();
        resolve();
      }
    };
    child.stdout.on('data', onData);
  });
  assert.match(first, /^\{"seq":1,/);
  const code = await new Promise<number | null>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('export went on after its reader had gone'));
    }, 30_000);
    child.on('exit', (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  });
  assert.equal(code, 1, stderr);
  assert.match(stderr, /^error: the output was closed before everything was written \(EPIPE\)\n$/);
});
