// W3C Trace Context versioning (§3.2.4, §4.3): a traceparent of a later version than 00 SHOULD be parsed by
// its first 55 characters when a dash follows them, so a client on a newer version keeps its trace through
// Gatehouse; version 00 must be exactly 55 characters and version ff is invalid. Cited by
// 2026-07-28/basic/index.mdx §OpenTelemetry trace context, which points at W3C Trace Context.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readTraceContext } from '../../../src/protocol/trace-context.js';

const IDS = '0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331';

test('a later version with extra fields is read by its first 55 characters and kept as sent', () => {
  const given = `01-${IDS}-01-what-the-future-adds`;
  const ctx = readTraceContext(given, 'vendor=abc');
  assert.deepEqual(ctx, { traceparent: given, tracestate: 'vendor=abc', traceId: '0af7651916cd43dd8448eb211c80319c' });
  // A later version with nothing after the flags is read too.
  assert.equal(readTraceContext(`cc-${IDS}-00`, undefined)?.traceId, '0af7651916cd43dd8448eb211c80319c');
});

test('what the versioning rules refuse is not read', () => {
  for (const bad of [
    `00-${IDS}-01-extra`, // version 00 is exactly 55 characters
    `01-${IDS}-01extra`, // after the flags, the end or a dash
    `ff-${IDS}-01`, // ff is invalid
    `01-${IDS}-01-with space`, // sent on as a header: printable, no spaces
    `01-${IDS}-01-${'x'.repeat(600)}`, // bounded
    `01-00000000000000000000000000000000-b7ad6b7169203331-01-x`,
    `01-0af7651916cd43dd8448eb211c80319c-0000000000000000-01-x`,
    `01-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01`,
  ]) assert.equal(readTraceContext(bad, undefined), undefined, bad);
  assert.equal(readTraceContext(`00-${IDS}-01`, undefined)?.traceId, '0af7651916cd43dd8448eb211c80319c');
});
