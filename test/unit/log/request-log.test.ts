// The per-request line (issue 17 item 2) is built as a string, not through pino: it must come out exactly
// as pino writes a line (level, time, bound fields, msg, then the fields, in the same order), and keep
// every protection the logger gives: client-chosen strings clipped and scrubbed of credential shapes,
// configured secret values scrubbed from the finished line.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger, REDACTED } from '../../../src/log/logger.js';
import { knownClientTexts, logRequests, millisText, requestMembers } from '../../../src/log/request-log.js';
import { channels, type CallEndEvent } from '../../../src/pipeline/events.js';

const JWT = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLWJ5dGVz';

function capture(secrets: string[] = []) {
  const raw: string[] = [];
  const log = createLogger('info', (l) => raw.push(l), {}, { secrets });
  return { log, raw };
}

const event = (over: Partial<CallEndEvent> = {}): CallEndEvent => ({
  callId: '0b6c9d4e-6a4f-4a53-9d1c-2f4a1b7e9c10',
  edge: {},
  httpMethod: 'POST',
  method: 'tools/call',
  era: 'modern',
  status: 200,
  outcome: 'ok',
  seconds: 0.0012345,
  subject: 'key:alice',
  tool: 'search',
  upstream: 'crm',
  ...over,
});

test('infoMembers writes the same line pino would for the same fields, bound fields included', () => {
  const { log, raw } = capture();
  const child = log.child({ component: 'edge', n: 2 });
  child.info('request', { callId: 'c1', status: 200, outcome: 'ok' });
  child.infoMembers('request', '"callId":"c1","status":200,"outcome":"ok"');
  assert.equal(raw.length, 2);
  const strip = (l: string): string => l.replace(/"time":"[^"]+"/, '"time":"T"');
  assert.equal(strip(raw[1]!), strip(raw[0]!));
  assert.match(raw[1]!, /^\{"level":"info","time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z","component":"edge","n":2,"msg":"request","callId":"c1",/);
});

test('infoMembers is dropped below info, like info()', () => {
  const raw: string[] = [];
  const log = createLogger('warn', (l) => raw.push(l));
  log.infoMembers('request', '"a":1');
  assert.deepEqual(raw, []);
});

test('the request line: every field of the event, in order, as JSON; optional ones left out', () => {
  const e = event({ refusal: 'rate_limited', stage: 'rateLimit', rule: 'per-key', outcome: 'refused', ctx: { trace: { traceId: 'a'.repeat(32), traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` } } as unknown as CallEndEvent['ctx'] });
  const members = JSON.parse(`{${requestMembers(e)}}`) as Record<string, unknown>;
  assert.deepEqual(members, {
    callId: e.callId,
    method: 'tools/call',
    era: 'modern',
    subject: 'key:alice',
    tool: 'search',
    upstream: 'crm',
    status: 200,
    outcome: 'refused',
    refusal: 'rate_limited',
    stage: 'rateLimit',
    rule: 'per-key',
    durationMs: 1.235,
    traceId: 'a'.repeat(32),
  });
  // Optional fields are left out, never written as null.
  const bare = JSON.parse(`{${requestMembers(event({ method: undefined, era: undefined, subject: undefined, tool: undefined, upstream: undefined, httpMethod: 'GET' }))}}`) as Record<string, unknown>;
  assert.deepEqual(Object.keys(bare), ['callId', 'method', 'status', 'outcome', 'durationMs']);
  assert.equal(bare.method, 'GET');
});

test('client-chosen strings are clipped, JSON-escaped and scrubbed; configured secrets are scrubbed from the line', () => {
  const { log, raw } = capture(['s3cr3t-value-42']);
  const edge = {};
  const stop = logRequests(edge, log);
  try {
    channels.end.publish(event({ edge, tool: `${'x'.repeat(300)}`, subject: `Bearer ${JWT}`, prompt: 'say "hi"\n and s3cr3t-value-42' }));
    channels.end.publish(event({ edge: {}, tool: 'another gateway' }));
  } finally {
    stop();
  }
  assert.equal(raw.length, 1, 'only the lines of this edge');
  const line = JSON.parse(raw[0]!) as Record<string, string>;
  assert.equal(line.msg, 'request');
  assert.equal(line.tool, `${'x'.repeat(200)}…`);
  assert.equal(line.subject, `Bearer ${REDACTED}`);
  assert.ok(!raw[0]!.includes(JWT));
  assert.equal(line.prompt, `say "hi"\n and ${REDACTED}`);
});

test('a field that is not a string (a refused request\'s method is whatever its body held) is written as its JSON text, never thrown on', () => {
  const { log, raw } = capture();
  const edge = {};
  const stop = logRequests(edge, log);
  try {
    // diagnostics_channel rethrows a subscriber's error on the next tick: a throw here would end the process.
    channels.end.publish(event({ edge, method: { 'j~R': [null], nested: { a: 1 } } as unknown as string, subject: 42 as unknown as string }));
  } finally {
    stop();
  }
  const line = JSON.parse(raw[0]!) as Record<string, string>;
  assert.equal(line.method, '{"j~R":[null],"nested":{"a":1}}');
  assert.equal(line.subject, '42');
});

test('durationMs is the duration in milliseconds to the microsecond, written as the shortest JSON number', () => {
  const cases: Array<[number, string]> = [
    [0.0012345, '1.235'],
    [0.0125, '12.5'],
    [0.003, '3'],
    [0, '0'],
    [0.0000004, '0'],
    [0.000001, '0.001'],
    [0.00001, '0.01'],
    [0.0001, '0.1'],
    [0.000123, '0.123'],
    [0.01203, '12.03'],
    [1.0001, '1000.1'],
    [123.456789, '123456.789'],
    [2e6, '2000000000'],
    [Number.NaN, '0'],
  ];
  for (const [seconds, text] of cases) {
    assert.equal(millisText(seconds), text, `${seconds} s`);
    // The same number the plain formula writes (for finite durations).
    if (Number.isFinite(seconds)) assert.equal(JSON.parse(millisText(seconds)), Math.round(seconds * 1e6) / 1e3, `${seconds} s as a number`);
  }
  for (let us = 0; us < 20_000; us += 7) assert.equal(JSON.parse(millisText(us / 1e6)), us / 1e3, `${us} µs`);
});

test('a client string seen before is written the same way again; one that held a credential or was clipped is scrubbed every time', () => {
  const { log, raw } = capture();
  const edge = {};
  const stop = logRequests(edge, log);
  try {
    for (let i = 0; i < 3; i++) {
      channels.end.publish(event({ edge, tool: 'search "quoted" \u00e9', subject: `Bearer ${JWT}`, prompt: 'y'.repeat(250) }));
    }
  } finally {
    stop();
  }
  assert.equal(raw.length, 3);
  // What was scrubbed or clipped is not kept: the table holds no credential a client sent.
  const known = knownClientTexts();
  const stop2 = logRequests(edge, log);
  try {
    for (let i = 0; i < 5; i++) channels.end.publish(event({ edge, tool: 'search "quoted" \u00e9', subject: `Bearer ${JWT}${i}`, prompt: `${'z'.repeat(250)}${i}` }));
  } finally {
    stop2();
  }
  assert.equal(knownClientTexts(), known);
  assert.equal(raw.length, 8);
  for (const l of raw.slice(3)) assert.ok(!l.includes(JWT) && !l.includes('z'.repeat(201)));
  const strip = (l: string): string => l.replace(/"time":"[^"]+"/, '"time":"T"');
  assert.equal(strip(raw[1]!), strip(raw[0]!));
  assert.equal(strip(raw[2]!), strip(raw[0]!));
  for (const l of raw.slice(0, 3)) {
    const line = JSON.parse(l) as Record<string, string>;
    assert.equal(line.tool, 'search "quoted" \u00e9');
    assert.equal(line.subject, `Bearer ${REDACTED}`);
    assert.equal(line.prompt, `${'y'.repeat(200)}…`);
    assert.ok(!l.includes(JWT));
  }
});

test('a client that sends ever new names does not grow the table of known ones without bound', () => {
  const { log, raw } = capture();
  const edge = {};
  const stop = logRequests(edge, log);
  try {
    for (let i = 0; i < 5_000; i++) channels.end.publish(event({ edge, tool: `tool-${i}` }));
  } finally {
    stop();
  }
  assert.equal(raw.length, 5_000);
  assert.equal((JSON.parse(raw[4_999]!) as Record<string, string>).tool, 'tool-4999');
  assert.ok(knownClientTexts() <= 1024, `${knownClientTexts()} strings kept`);
});

test('a credential that a client string holds across the 200-character cut is scrubbed whole, not left as a prefix', () => {
  // Scrubbed after the cut, a `gh_` key whose first characters fell before it was too short for its shape
  // (20 characters after `gh_`) and its prefix was logged; so was the first part of a configured secret.
  const KEY = `gh_${'K'.repeat(40)}`;
  const SECRET = 'configured-upstream-secret-0123456789';
  const { log, raw } = capture([SECRET]);
  const edge = {};
  const stop = logRequests(edge, log);
  try {
    channels.end.publish(event({ edge, tool: `${'x'.repeat(190)}${KEY}`, prompt: `${'y'.repeat(185)}${SECRET}` }));
  } finally {
    stop();
  }
  assert.equal(raw.length, 1);
  const line = JSON.parse(raw[0]!) as Record<string, string>;
  assert.ok(!raw[0]!.includes('gh_K'), `no part of the key: ${line.tool}`);
  assert.ok(!raw[0]!.includes(SECRET.slice(0, 10)), `no part of the configured secret: ${line.prompt}`);
  assert.ok(line.tool!.startsWith(`${'x'.repeat(190)}${REDACTED}`), line.tool);
  assert.ok(line.prompt!.startsWith(`${'y'.repeat(185)}${REDACTED}`), line.prompt);
  assert.ok(line.tool!.length <= 201 && line.prompt!.length <= 201, 'still clipped');
});
