// Policy from YAML (issue 13): egress rules on arguments, rate limits (per caller and per address), budgets
// and circuit breakers, each refusal one the model can act on. Real SDK clients receive the refusals as tool
// results (v1, legacy era; v2, modern era); the upstream (a v2 SDK server that records every tools/call it
// receives) proves a refused call never reached it; every refusal is counted by code and rule, logged and
// audited with its rule.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { request } from 'undici';
import { hashKey } from '../../src/auth/key-hash.js';
import { validateConfigObject } from '../../src/config/load.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const ALICE = 'gh_alice_0123456789abcdefghijklmnopqrstuv';
const BOB = 'gh_bob_0123456789abcdefghijklmnopqrstuvwx';
const CAROL = 'gh_carol_0123456789abcdefghijklmnopqrstu';
const DAVE = 'gh_dave_0123456789abcdefghijklmnopqrstuvw';
/** Names an attacker's DNS would point inside; the rest resolve to a public address. */
const DNS: Record<string, string[]> = { 'inside.attacker.test': ['10.0.0.9'], 'api.partner.example': ['93.184.216.34'], 'lab.internal': ['10.20.3.4'] };
const resolveHost = async (host: string) => {
  const found = DNS[host];
  if (!found) throw Object.assign(new Error(`ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return found;
};

const POLICY = {
  egress: [
    { id: 'lab', keys: ['carol'], allow: { cidrs: ['10.20.0.0/16'] } },
    { id: 'partner-only', tools: ['up/lookup'], allow: { hosts: ['*.partner.example'], schemes: ['https'] } },
  ],
  rateLimits: [
    { id: 'per-address', per: 'ip', keys: ['carol'], rate: 3, perSeconds: 60, burst: 3 },
    { id: 'bob-slow', per: 'key', keys: ['bob'], rate: 2, perSeconds: 60, burst: 2 },
  ],
  budgets: [
    { id: 'alice-lookups', per: 'subject', subjects: ['key:alice'], tools: ['up/lookup'], window: 'day', limit: 5, cost: 2 },
  ],
  breakers: [{ id: 'upstream-health', per: 'upstream', consecutiveFailures: 2, coolDownSeconds: 1 }],
};

let up: CountingUpstream;
let gw: TestGateway;
let storePath: string;
before(async () => {
  up = await startCountingUpstream('modern');
  storePath = `${(await import('node:os')).tmpdir()}/gatehouse-policy-${process.pid}-${Date.now()}.db`;
  gw = await startGateway(
    {
      upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
      auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }, { id: 'bob', hash: hashKey(BOB), scopes: [] }, { id: 'carol', hash: hashKey(CAROL), scopes: [] }, { id: 'dave', hash: hashKey(DAVE), scopes: [] }] },
      store: { kind: 'sqlite', path: storePath },
      metrics: { enabled: true, port: 0 },
      policy: POLICY,
    },
    { resolveHost },
  );
});
after(async () => {
  await gw.close();
  await up.close();
});

let n = 0;
async function call(token: string, name: string, args: Record<string, unknown>) {
  const req = modernRequest(++n, 'tools/call', { name, arguments: args });
  const res = await post(gw.url, req.body, { ...req.headers, authorization: `Bearer ${token}` });
  return { res, result: res.json().result as { isError?: boolean; content: Array<{ text: string }>; structuredContent?: { error?: { code: string; message: string; rule?: string } }; _meta?: Record<string, unknown> } };
}
const reached = (item: string) => up.received.filter((b) => b.includes(JSON.stringify(item))).length;

describe('egress rules on arguments', () => {
  test('a v2 (modern) SDK client gets egress_blocked as a tool result; the upstream never sees the call', async () => {
    const client = new V2Client({ name: 'policy-v2', version: '1' });
    await client.connect(new V2Transport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${ALICE}` } } }));
    try {
      const item = 'fetch http://169.254.169.254/latest/meta-data/ please';
      const result = (await client.callTool({ name: 'record', arguments: { item } })) as { isError?: boolean; content: Array<{ type: string; text: string }>; structuredContent?: { error?: { code: string; rule?: string } } };
      assert.equal(result.isError, true);
      assert.equal(result.structuredContent?.error?.code, 'egress_blocked');
      assert.equal(result.structuredContent?.error?.rule, 'default');
      assert.match(result.content[0]!.text, /The argument "item" names .*169\.254\.169\.254.*metadata address/);
      assert.equal(reached(item), 0);
    } finally {
      await client.close();
    }
  });

  test('a v1 (legacy) SDK client gets the same tool result for a name that resolves inside', async () => {
    const client = new V1Client({ name: 'policy-v1', version: '1' });
    await client.connect(new V1Transport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${ALICE}` } } }));
    try {
      const item = 'http://inside.attacker.test/admin';
      const result = await client.callTool({ name: 'record', arguments: { item } });
      assert.equal(result.isError, true);
      assert.equal((result.structuredContent as { error: { code: string } }).error.code, 'egress_blocked');
      assert.match((result.content as Array<{ text: string }>)[0]!.text, /inside\.attacker\.test" resolves to 10\.0\.0\.9/);
      assert.equal(reached(item), 0);
      const fine = await client.callTool({ name: 'record', arguments: { item: 'https://api.partner.example/x' } });
      assert.equal(fine.isError, undefined, 'a public destination passes');
    } finally {
      await client.close();
    }
  });

  test('what a WHATWG parser reads as a host is judged: no slashes after http:, a second URL after a first, a scheme after a word character', async () => {
    // fetch("http:127.0.0.1:9/x") connects to 127.0.0.1:9; these once reached the upstream unread.
    for (const item of ['http:127.0.0.1:9/x', 'https:\\\\169.254.169.254/latest', 'https://api.partner.example/docs\nhttp://10.0.0.1/', 'see_http://127.0.0.1/']) {
      const { result } = await call(DAVE, 'record', { item });
      assert.equal(result.structuredContent?.error?.code, 'egress_blocked', item);
      assert.equal(reached(item), 0, item);
    }
  });

  test('an IPv6 address without brackets, or with a zone id, is judged as the address', async () => {
    // Python's clients (and curl) connect to `::1`, `fe80::1%eth0` and `http://[fe80::1%25eth0]/`; the WHATWG
    // parser refuses all three, and until the seventh session of 3 December they reached the upstream unread.
    for (const item of ['::1', '::ffff:127.0.0.1', 'fe80::1%eth0', 'http://[fe80::1%25eth0]/x', 'see http://[::1%lo]:99/']) {
      const { result } = await call(DAVE, 'record', { item });
      assert.equal(result.structuredContent?.error?.code, 'egress_blocked', item);
      assert.equal(reached(item), 0, item);
    }
  });

  test('JSON text inside a string argument is read: a host field in it is judged as the host', async () => {
    // A server that decodes the payload connects to the host in it; it once reached the upstream unread.
    for (const item of ['{"host":"169.254.169.254"}', JSON.stringify(JSON.stringify({ endpoint: '10.0.0.1' }))]) {
      const { result } = await call(DAVE, 'record', { item });
      assert.equal(result.structuredContent?.error?.code, 'egress_blocked', item);
      assert.match(result.content[0]!.text, /The argument "item\(JSON\)/, item);
      assert.equal(reached(item), 0, item);
    }
  });

  test('arguments with more strings than the check reads are refused, not passed unread', async () => {
    const item = 'http://127.0.0.1/';
    const { result } = await call(DAVE, 'record', { item: 'x', more: [...Array.from({ length: 100_000 }, () => 'x'), item] });
    assert.equal(result.structuredContent?.error?.code, 'egress_blocked');
    assert.match(result.content[0]!.text, /too many to check/);
  });

  test('rules select by key and by tool: an allow by CIDR, an allow by host and scheme', async () => {
    assert.equal((await call(CAROL, 'record', { item: 'http://lab.internal/run' })).result.isError, undefined, "carol's rule allows the lab network");
    const outside = await call(CAROL, 'record', { item: 'http://10.0.0.1/' });
    assert.equal(outside.result.structuredContent?.error?.rule, 'lab');
    assert.match(outside.result.content[0]!.text, /rule "lab" does not allow it/);
    assert.equal((await call(DAVE, 'lookup', { item: 'https://api.partner.example/q' })).result.isError, undefined);
    const http = await call(DAVE, 'lookup', { item: 'http://api.partner.example/q' });
    assert.equal(http.result.structuredContent?.error?.rule, 'partner-only', 'https only');
  });

  test('a file: URL is refused where the rule lists schemes without file, and passes where no scheme rule applies', async () => {
    // A fetch tool that takes file: reads the server's own files; an "https only" rule once let it through,
    // since a file: URL without a host named no destination.
    for (const item of ['file:///etc/passwd', 'FILE:/etc/passwd', 'read file:///etc/shadow for me']) {
      const { result } = await call(DAVE, 'lookup', { item });
      assert.equal(result.structuredContent?.error?.code, 'egress_blocked', item);
      assert.equal(result.structuredContent?.error?.rule, 'partner-only', item);
      assert.match(result.content[0]!.text, /which reaches the server's own files: blocked, because rule "partner-only" does not allow it/, item);
      assert.equal(reached(item), 0, item);
    }
    // No rule selects dave's record calls: no scheme rule, so a local path passes, as a filesystem server needs.
    assert.equal((await call(DAVE, 'record', { item: 'file:///data/report.txt' })).result.isError, undefined);
  });
});

describe('rate limits', () => {
  test('per key: past the bucket a call is rate_limited with retry_after; other callers are not affected', async () => {
    const first = await call(BOB, 'record', { item: 'bob-1' });
    const second = await call(BOB, 'record', { item: 'bob-2' });
    const third = await call(BOB, 'record', { item: 'bob-3' });
    assert.equal(first.result.isError, undefined);
    assert.equal(second.result.isError, undefined);
    assert.equal(third.result.structuredContent?.error?.code, 'rate_limited');
    assert.equal(third.result.structuredContent?.error?.rule, 'bob-slow');
    const retry = third.result._meta?.['dev.gatehouse/retry_after'] as number;
    assert.ok(retry >= 1 && retry <= 30, `retry after ${retry} s (one token per 30 s)`);
    assert.match(third.result.content[0]!.text, /Rate limit "bob-slow" reached .* retry in \d+ s/);
    assert.equal(reached('bob-3'), 0);
    assert.equal((await call(ALICE, 'record', { item: 'alice-unlimited' })).result.isError, undefined);
  });

  test('per address: 429 with Retry-After before the body is read, on any method', async () => {
    const statuses: number[] = [];
    let last;
    for (let i = 0; i < 5; i++) {
      const req = modernRequest(++n, 'tools/list', {});
      last = await post(gw.url, req.body, { ...req.headers, authorization: `Bearer ${CAROL}` });
      statuses.push(last.status);
    }
    // Carol spent one token on each earlier call in this file (two record calls): 3 per minute in all.
    assert.ok(statuses.filter((s) => s === 429).length >= 2, `statuses ${statuses.join(' ')}`);
    assert.equal(last!.status, 429);
    assert.ok(Number(last!.headers['retry-after']) >= 1);
    assert.equal(last!.json().error.data.code, 'rate_limited');
    assert.equal(last!.json().error.data.rule, 'per-address');
    assert.equal(last!.headers['connection'], 'close', 'the unread body ends the connection');
  });
});

describe('budgets', () => {
  test('cost units per calendar window: a spent budget is budget_exhausted with retry_after and quota', async () => {
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await call(ALICE, 'lookup', { item: `budget-${i}` }));
    assert.deepEqual(
      answers.map((a) => a.result.isError ?? false),
      [false, false, true],
      'each lookup costs 2 of 5',
    );
    const refused = answers[2]!.result;
    assert.equal(refused.structuredContent?.error?.code, 'budget_exhausted');
    const quota = refused._meta?.['dev.gatehouse/quota'] as { limit: number; used: number; window: string; resetsAt: string };
    assert.deepEqual({ limit: quota.limit, used: quota.used, window: quota.window }, { limit: 5, used: 4, window: 'day' });
    const midnight = new Date();
    midnight.setUTCHours(24, 0, 0, 0);
    assert.equal(quota.resetsAt, midnight.toISOString());
    const retry = refused._meta?.['dev.gatehouse/retry_after'] as number;
    assert.ok(Math.abs(retry - (midnight.getTime() - Date.now()) / 1000) < 60);
    assert.match(refused.content[0]!.text, /Budget "alice-lookups" is spent: 4 of 5 units per day .* this call costs 2\. It resets at .*; retry in/);
    assert.equal(reached('budget-2'), 0);
    assert.equal((await call(BOB, 'lookup', { item: 'bob-has-no-budget' })).result.structuredContent?.error?.code, 'rate_limited', "bob's own limit, not alice's budget");
  });
});

describe('circuit breakers', () => {
  test('consecutive upstream failures open the circuit; calls are refused at once; one probe closes it again', async () => {
    up.failing = true;
    try {
      for (let i = 0; i < 2; i++) {
        const r = await call(ALICE, 'record', { item: `fail-${i}` });
        assert.equal(r.res.status, 502, r.res.text);
      }
      const before = up.received.length;
      const open = await call(ALICE, 'record', { item: 'while-open' });
      assert.equal(open.result.structuredContent?.error?.code, 'upstream_unavailable');
      assert.equal(open.result.structuredContent?.error?.rule, 'upstream-health');
      assert.ok((open.result._meta?.['dev.gatehouse/retry_after'] as number) >= 1);
      assert.equal(up.received.length, before, 'refused at once: the upstream was not asked');
      const gauge = await (await request(gw.gateway.metricsUrl!)).body.text();
      assert.match(gauge, /^gatehouse_circuit_state\{breaker="upstream-health",target="up"\} 1$/m);
    } finally {
      up.failing = false;
    }
    await new Promise((r) => setTimeout(r, 1_100));
    const probe = await call(ALICE, 'record', { item: 'probe' });
    assert.equal(probe.result.isError, undefined, 'the probe went through and succeeded');
    // Recorded on the side: bounded wait for the state to settle.
    let metrics = '';
    for (let i = 0; i < 40; i++) {
      metrics = await (await request(gw.gateway.metricsUrl!)).body.text();
      if (/gatehouse_circuit_state\{breaker="upstream-health",target="up"\} 0$/m.test(metrics)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.match(metrics, /^gatehouse_circuit_state\{breaker="upstream-health",target="up"\} 0$/m);
    assert.equal((await call(ALICE, 'record', { item: 'after' })).result.isError, undefined);
  });

  test('a tool result with isError is the tool answering, not the upstream failing', async () => {
    for (let i = 0; i < 4; i++) assert.equal((await call(ALICE, 'record_fails', { item: `tool-error-${i}` })).result.isError, true);
    assert.equal((await call(ALICE, 'record', { item: 'still-closed' })).result.isError, undefined);
  });
});

describe('the refusals reach real SDK clients of both eras as tool results', () => {
  test('v1 (legacy) gets rate_limited and budget_exhausted; v2 (modern) gets upstream_unavailable, each with its _meta', async () => {
    const v1 = new V1Client({ name: 'policy-v1-limits', version: '1' });
    await v1.connect(new V1Transport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${BOB}` } } }));
    try {
      // Bob's bucket (2 per minute) was emptied above.
      const limited = await v1.callTool({ name: 'record', arguments: { item: 'v1-limited' } });
      assert.equal(limited.isError, true);
      assert.equal((limited.structuredContent as { error: { code: string } }).error.code, 'rate_limited');
      assert.ok(typeof limited._meta?.['dev.gatehouse/retry_after'] === 'number');
      assert.equal(reached('v1-limited'), 0);
    } finally {
      await v1.close();
    }
    const v1alice = new V1Client({ name: 'policy-v1-budget', version: '1' });
    await v1alice.connect(new V1Transport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${ALICE}` } } }));
    try {
      const spent = await v1alice.callTool({ name: 'lookup', arguments: { item: 'v1-over-budget' } });
      assert.equal((spent.structuredContent as { error: { code: string } }).error.code, 'budget_exhausted');
      assert.deepEqual(Object.keys(spent._meta?.['dev.gatehouse/quota'] as object).sort(), ['limit', 'resetsAt', 'used', 'window']);
    } finally {
      await v1alice.close();
    }
    const v2 = new V2Client({ name: 'policy-v2-breaker', version: '1' });
    await v2.connect(new V2Transport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${DAVE}` } } }));
    up.failing = true;
    try {
      for (let i = 0; i < 2; i++) await v2.callTool({ name: 'record', arguments: { item: `v2-fail-${i}` } }).catch(() => undefined);
      const open = (await v2.callTool({ name: 'record', arguments: { item: 'v2-while-open' } })) as { isError?: boolean; structuredContent?: { error?: { code: string } }; _meta?: Record<string, unknown> };
      assert.equal(open.isError, true);
      assert.equal(open.structuredContent?.error?.code, 'upstream_unavailable');
      assert.ok(typeof open._meta?.['dev.gatehouse/retry_after'] === 'number');
      assert.equal(reached('v2-while-open'), 0);
    } finally {
      up.failing = false;
    }
    // Leave the circuit closed for the tests after this one: a probe after the cool-down.
    await new Promise((r) => setTimeout(r, 1_100));
    assert.equal(((await v2.callTool({ name: 'record', arguments: { item: 'v2-probe' } })) as { isError?: boolean }).isError, undefined);
    await v2.close();
  });
});

describe('every refusal is counted, logged and audited with its rule', () => {
  test('metrics, log lines and audit records', async () => {
    const metrics = await (await request(gw.gateway.metricsUrl!)).body.text();
    for (const [code, rule] of [
      ['egress_blocked', 'default'],
      ['egress_blocked', 'lab'],
      ['egress_blocked', 'partner-only'],
      ['rate_limited', 'bob-slow'],
      ['rate_limited', 'per-address'],
      ['budget_exhausted', 'alice-lookups'],
      ['upstream_unavailable', 'upstream-health'],
    ]) {
      assert.match(metrics, new RegExp(`^gatehouse_policy_refusals_total\\{code="${code}",rule="${rule}"\\} [1-9]`, 'm'), `${code}/${rule}`);
    }
    assert.ok(gw.logs.some((l) => l.msg === 'request' && l.refusal === 'budget_exhausted' && l.rule === 'alice-lookups' && l.stage === 'budget'));
    const store = new SqliteStore(storePath);
    try {
      const records = await store.readAudit({ limit: 10_000 });
      const rules = new Set(records.filter((r) => r.rule !== undefined).map((r) => `${r.refusal}/${r.rule}`));
      for (const expected of ['egress_blocked/default', 'rate_limited/bob-slow', 'budget_exhausted/alice-lookups', 'upstream_unavailable/upstream-health']) assert.ok(rules.has(expected), `${expected} in ${[...rules].join(', ')}`);
    } finally {
      await store.close();
    }
  });
});

describe('rules are data', () => {
  test('a reload applies new policy from the next call on, and the counters survive it', async () => {
    const denied = await call(ALICE, 'lookup', { item: 'before-reload' });
    assert.equal(denied.result.structuredContent?.error?.code, 'budget_exhausted');
    const raised = { ...POLICY, budgets: [{ ...POLICY.budgets[0], limit: 7 }] };
    const next = validateConfigObject(
      {
        upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
        auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }, { id: 'bob', hash: hashKey(BOB), scopes: [] }, { id: 'carol', hash: hashKey(CAROL), scopes: [] }, { id: 'dave', hash: hashKey(DAVE), scopes: [] }] },
        store: { kind: 'sqlite', path: storePath },
        metrics: { enabled: true, port: 0 },
        idempotency: { requireKeys: false },
        listen: { host: '127.0.0.1', port: 0 },
        policy: raised,
      },
      'reload',
    );
    assert.deepEqual(await gw.gateway.reload(next), []);
    const once = await call(ALICE, 'lookup', { item: 'after-reload-1' });
    assert.equal(once.result.isError, undefined, '4 used + 2 = 6 of the new 7');
    const twice = await call(ALICE, 'lookup', { item: 'after-reload-2' });
    assert.equal((twice.result._meta?.['dev.gatehouse/quota'] as { used: number }).used, 6, 'the count went on from before the reload');
  });
});
