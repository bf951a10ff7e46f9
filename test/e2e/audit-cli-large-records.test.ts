// `gatehouse audit verify` and `export` on a log of large records. A record holds a call's arguments, up
// to listen.maxBodyBytes each (1 MiB by default), and the CLI read the log 1,000 records at a time: on a
// log of 1,000 calls of 1 MB, verify peaked at 4 GB of RSS (the page as rows, as records in the writer
// thread, and cloned into the main thread), far past the chart's 512Mi limit, where it was killed. A page
// now also stops at 8 MiB of stored text. And export wrote to a pipe without waiting for its reader, so
// what the reader had not taken yet (the log, for a reader slower than the export) waited in memory; it
// now waits for the pipe to drain. Run as an operator runs it, with V8's heap held to 128 MB, on a log of
// 300 records of 512 KiB (150 MB): the writer thread ran out of heap ("the writer stopped (Worker
// terminated due to reaching memory limit: JS heap out of memory)", exit 1), and with pages bounded
// alone, export's main thread did (queued writes); now both commands get through.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { MAIN, ROOT } from '../helpers/cli.js';

const RECORDS = 300;
const BLOB = 'x'.repeat(512 * 1024);
let path: string;

before(async () => {
  path = join(mkdtempSync(join(tmpdir(), 'gatehouse-audit-large-')), 'audit.db');
  const store = new SqliteStore(path);
  for (let i = 1; i <= RECORDS; i += 50) {
    await Promise.all(Array.from({ length: 50 }, (_, k) => store.appendAudit({ time: new Date().toISOString(), callId: `c${i + k}`, runId: `r${i + k}`, subject: 'alice', tool: 'upload', method: 'tools/call', argumentsSha256: '0'.repeat(64), arguments: { blob: BLOB }, outcome: 'ok', latencyMs: 1 }, 50)));
  }
  await store.close();
});

/** The built CLI with a 128 MB heap; stdout is counted (lines, bytes), not kept. */
function run(args: string[]): Promise<{ code: number | null; lines: number; bytes: number; head: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--max-old-space-size=128', MAIN, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let lines = 0;
    let bytes = 0;
    let head = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      bytes += d.length;
      for (const c of d) if (c === 0x0a) lines++;
      if (head.length < 200) head += d.subarray(0, 200).toString('latin1');
    });
    child.stderr.on('data', (d) => (stderr += String(d)));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`gatehouse ${args.join(' ')} did not finish in 90 s; stderr: ${stderr}`));
    }, 90_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, lines, bytes, head, stderr });
    });
  });
}

describe('audit on a log of large records, in a small heap', () => {
  test('verify gets through every record', { timeout: 120_000 }, async () => {
    const r = await run(['audit', 'verify', '--store', path]);
    assert.equal(r.stderr, '');
    assert.equal(r.code, 0);
    assert.match(r.head, new RegExp(`^audit chain ok: ${RECORDS} records, last ${RECORDS}, head [0-9a-f]{64}\\n$`));
  });

  test('export writes every record once', { timeout: 120_000 }, async () => {
    const r = await run(['audit', 'export', '--store', path]);
    assert.equal(r.stderr, '');
    assert.equal(r.code, 0);
    assert.equal(r.lines, RECORDS);
    assert.ok(r.bytes > RECORDS * BLOB.length, `${r.bytes} bytes`);
  });
});
