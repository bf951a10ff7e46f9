// The audit record's canonical JSON is made once, from the arguments' JSON made for their digest
// (audit-chain.ts canonicalEntryJson, called by audit-trail.ts), and an entry's arguments are copied for
// redaction only when they may hold a secret (logger.ts mayHoldSecrets). Both are shortcuts of a call made
// for every governed call, so each must give exactly what the general functions give: the chain's hashes
// and `audit verify` are computed with canonicalJson.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mayHoldSecrets, redactValue } from '../../../src/log/logger.js';
import { canonicalJson } from '../../../src/protocol/canonical-json.js';
import { canonicalEntryJson, entryJson, knowEntryJson } from '../../../src/store/audit-chain.js';
import type { AuditEntry } from '../../../src/store/store.js';

/** Every member set: a new member of AuditEntry must be added here too (Required<> says so). */
const FULL: Required<AuditEntry> = {
  time: '2026-12-01T05:00:00.000Z',
  callId: 'c-1',
  runId: 'r-1',
  subject: 'ké"y\\\u2028',
  tenant: 'acme',
  keyId: 'bench',
  tokenId: 'tok',
  toolRef: 'bench/echo',
  tool: 'bench_echo',
  method: 'tools/call',
  argumentsSha256: 'ab'.repeat(32),
  arguments: { z: [3, { b: 1, a: null }], a: 'x', '10': 'ten', '2': 'two', nested: { y: true, x: -0.5e-7 } },
  outcome: 'refused',
  refusal: 'rate_limited',
  stage: 'rateLimit',
  upstream: 'bench',
  latencyMs: 1.234,
  approvalId: 'ap-1',
  idempotencyKey: 'k-1',
  rule: 'r',
  reviewer: 'alice',
  reason: 'ok',
  run: 2,
};

test('canonicalEntryJson equals canonicalJson for a full entry, with the arguments JSON given or not', () => {
  assert.equal(canonicalEntryJson(FULL, canonicalJson(FULL.arguments)), canonicalJson(FULL));
  assert.equal(canonicalEntryJson(FULL, undefined), canonicalJson(FULL));
});

test('canonicalEntryJson equals canonicalJson for entries with members left out, or set to undefined', () => {
  const keys = Object.keys(FULL) as Array<keyof AuditEntry>;
  for (let i = 0; i < keys.length; i++) {
    const some: Record<string, unknown> = {};
    // Every third member from i on: many shapes, each member both present and absent somewhere.
    for (let j = 0; j < keys.length; j++) some[keys[j]!] = (j + i) % 3 === 0 ? undefined : FULL[keys[j]!];
    const entry = some as unknown as AuditEntry;
    assert.equal(canonicalEntryJson(entry, entry.arguments === undefined ? undefined : canonicalJson(entry.arguments)), canonicalJson(entry), `shape ${i}`);
  }
});

test('canonicalEntryJson writes each string member as JSON.stringify does: quotes, backslashes, control characters, surrogates', () => {
  // Strings without these are written between quotes without JSON.stringify (audit-chain.ts memberJson).
  const texts = ['plain-id_1.2:3/4 @x', '', 'say "hi"', 'back\\slash', 'tab\there', 'nul\u0000', 'unit\u001f', 'del\u007f', 'é ü ß', 'line\u2028sep', 'pair \ud83d\ude00', 'lone \ud83d here', 'lone \ude00 here', 'end \ud83d'];
  for (const text of texts) {
    const entry: AuditEntry = { ...FULL, subject: text, tool: text, reason: text };
    assert.equal(canonicalEntryJson(entry, undefined), canonicalJson(entry), JSON.stringify(text));
    assert.equal((JSON.parse(canonicalEntryJson(entry, undefined)) as AuditEntry).subject, JSON.parse(JSON.stringify(text)) as string);
  }
  // Numbers: finite ones as String() writes them, the others as JSON does (null).
  for (const latencyMs of [0, -0, 1.234, 1e21, 5e-7, -3, Number.NaN, Number.POSITIVE_INFINITY]) {
    const entry: AuditEntry = { ...FULL, latencyMs };
    assert.equal(canonicalEntryJson(entry, undefined), canonicalJson(entry), String(latencyMs));
  }
});

test('the store appends the JSON the entry was made with, or canonicalJson of an entry made elsewhere', () => {
  const made: AuditEntry = { ...FULL };
  knowEntryJson(made, canonicalEntryJson(made, canonicalJson(made.arguments)));
  assert.equal(entryJson(made), canonicalJson(FULL));
  const other: AuditEntry = { ...FULL, outcome: 'ok' };
  assert.equal(entryJson(other), canonicalJson(other));
  // A copy made from a made entry, then changed, is written as it now is, not as the original was.
  const copy: AuditEntry = { ...made, outcome: 'tool_error' };
  assert.equal(entryJson(copy), canonicalJson(copy));
  assert.notEqual(entryJson(copy), entryJson(made));
});

test('mayHoldSecrets: plain arguments say no, and redactValue leaves such arguments as they were', () => {
  const plain = [{ text: 'hello' }, { url: 'https://example.com/a?b=c', n: [1, 2, { deep: 'x' }] }, [], {}, 'short', 42, null, { keyId: 'bench', tokenId: 't' }];
  for (const v of plain) {
    assert.equal(mayHoldSecrets(v), false, JSON.stringify(v));
    assert.equal(canonicalJson(redactValue(v)), canonicalJson(v));
  }
});

test('redactValue keeps a member named __proto__ as a member of the copy (the audit record and the approval preview show it)', () => {
  const args = JSON.parse('{"password":"hunter2-hunter2","__proto__":{"target":"prod","apiKey":"k-0123456789"},"list":[{"__proto__":1}]}') as Record<string, unknown>;
  assert.equal(mayHoldSecrets(args), true);
  assert.equal(canonicalJson(redactValue(args)), '{"__proto__":{"apiKey":"[redacted]","target":"prod"},"list":[{"__proto__":1}],"password":"[redacted]"}');
  assert.equal(({} as Record<string, unknown>).target, undefined);
});

test('mayHoldSecrets: a credential-named field, credential-shaped text, an Error, a toJSON or a cycle say yes', () => {
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  const deep: Record<string, unknown> = {};
  let at = deep;
  for (let i = 0; i < 70; i++) at = (at.next = {}) as Record<string, unknown>;
  const risky = [
    { password: 'x' },
    { nested: [{ Authorization: 'Basic abc' }] },
    { text: 'use Bearer abcdefghijklmnop' },
    ['eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln'],
    { key: 'gh_0123456789abcdefghijklmnopq' },
    { e: new Error('boom') },
    { d: new Date(0) },
    cyclic,
    deep,
  ];
  for (const v of risky) assert.equal(mayHoldSecrets(v), true);
  // And where it says yes because of a secret, redactValue does change the value.
  for (const v of risky.slice(0, 5)) assert.notEqual(canonicalJson(redactValue(v)), canonicalJson(v));
});
