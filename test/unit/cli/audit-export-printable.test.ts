// `gatehouse audit export` and `tail` print records whose strings a caller chose: the arguments of a call,
// a tool name no list gave, a token's `sub`. JSON.stringify escapes the C0 controls (ESC among them) but
// leaves DEL, the C1 controls (U+009B is a one-character CSI to a terminal that honours C1), the line and
// paragraph separators and the bidirectional overrides as they are: a caller could name a tool
// `list\u202e` and have an operator's terminal show the rest of the line reversed. They are written as
// `\uXXXX` (src/cli/printable.ts, as pins and approvals already were): each line is still JSON, and reads
// back as the record stored.

import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { auditCommand } from '../../../src/cli/audit.js';
import { SqliteStore } from '../../../src/store/sqlite-store.js';
import type { AuditEntry } from '../../../src/store/store.js';

/** DEL, a C1 CSI, a line separator, a right-to-left override, a first-strong isolate; and ESC, which JSON escaped already. */
const HOSTILE = 'rm -rf /\u007f\u009b2J\u2028\u202etxt.exe\u2068\u001b[3A';
const RAW = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\u001b]/;

function entry(i: number): AuditEntry {
  return { time: new Date().toISOString(), callId: `c${i}`, runId: `r${i}`, subject: `sub-${HOSTILE}`, tool: `list${HOSTILE}`, method: 'tools/call', argumentsSha256: '0'.repeat(64), arguments: { command: HOSTILE, [HOSTILE]: 1 }, outcome: 'refused', refusal: 'unknown_tool', latencyMs: 1 };
}

let path: string;

before(async () => {
  path = join(mkdtempSync(join(tmpdir(), 'gatehouse-audit-printable-')), 'audit.db');
  const store = new SqliteStore(path);
  await store.appendAudit(entry(1));
  await store.close();
});

function io(out: string[], err: string[]) {
  return { out: (t: string) => out.push(t), err: (t: string) => err.push(t), readStdin: async () => '', env: {} };
}

describe('audit export and tail on records with control characters', () => {
  it('export writes them escaped, and each line reads back as the stored record', async () => {
    const out: string[] = [];
    const err: string[] = [];
    assert.equal(await auditCommand(['export', '--store', path], io(out, err)), 0, err.join(''));
    const text = out.join('');
    assert.doesNotMatch(text, RAW);
    const lines = text.split('\n').filter((l) => l !== '');
    assert.equal(lines.length, 1);
    const record = JSON.parse(lines[0]!) as AuditEntry;
    assert.equal(record.tool, `list${HOSTILE}`);
    assert.equal(record.subject, `sub-${HOSTILE}`);
    assert.deepEqual(record.arguments, { command: HOSTILE, [HOSTILE]: 1 });
  });

  it('tail writes them escaped too', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const stop = new AbortController();
    const running = auditCommand(['tail', '--store', path, '--interval-ms', '50'], io(out, err), stop.signal);
    await sleep(200);
    const store = new SqliteStore(path);
    await store.appendAudit(entry(2));
    await store.close();
    for (let i = 0; i < 100 && out.length === 0; i++) await sleep(50);
    stop.abort();
    assert.equal(await running, 0, err.join(''));
    const text = out.join('');
    assert.doesNotMatch(text, RAW);
    const record = JSON.parse(text.trim()) as AuditEntry;
    assert.equal(record.callId, 'c2');
    assert.equal(record.tool, `list${HOSTILE}`);
  });
});
