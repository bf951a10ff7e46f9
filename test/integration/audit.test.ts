// The audit (issue 12 item 2; the FITsociety seed: "the generic audit record is durably persisted before
// the official transport response is returned"): one record per governed call, whatever its outcome (ok,
// tool error, refused at any stage, failed upstream), holding who called what with which arguments (hashed,
// and redacted), the outcome and refusal code, the upstream and latency; chained by hash; its run id
// handed back in `_meta["dev.gatehouse/run_id"]`; and retention that keeps the chain verifiable.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashKey } from '../../src/auth/key-hash.js';
import { canonicalJson } from '../../src/protocol/canonical-json.js';
import { verifyChain } from '../../src/store/audit-chain.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import type { AuditRecord } from '../../src/store/store.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const ALICE = 'gh_alice_0123456789abcdefghijklmnopqrstuv';
let up: CountingUpstream;
let bad: FakeUpstream;
let gw: TestGateway;
let storePath: string;
const names = new Map<string, string>();

before(async () => {
  up = await startCountingUpstream('modern');
  // An upstream that drops the connection on every call: the call fails on the way.
  bad = await startFakeUpstream(
    (_req, res, body) => {
      const msg = JSON.parse(body) as { id?: unknown; method: string };
      if (msg.id === undefined) return void res.writeHead(202).end();
      if (msg.method === 'tools/list')
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            jsonrpc: '2.0',
            id: msg.id,
            result: {
              tools: [{ name: 'crash', inputSchema: { type: 'object' } }],
              resultType: 'complete',
            },
          }),
        );
      res.destroy();
    },
    { handshake: 'modern' },
  );
  storePath = join(mkdtempSync(join(tmpdir(), 'gatehouse-audit-')), 'audit.db');
  gw = await startGateway({
    upstreams: [
      { name: 'up', url: up.url, era: 'modern' },
      { name: 'bad', url: bad.url, era: 'modern' },
    ],
    store: { kind: 'sqlite', path: storePath },
    auth: {
      anonymous: false,
      apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }],
    },
    policy: {
      rules: [
        { id: 'no-lookups-of-x', access: 'deny', tools: ['up/lookup'] },
        { access: 'allow', tools: ['*'] },
      ],
    },
  });
  const list = await send('tools/list', {});
  for (const t of list.json().result.tools as Array<{
    name: string;
    _meta?: Record<string, string>;
  }>)
    names.set(t._meta?.['dev.gatehouse/tool_ref'] ?? t.name, t.name);
  // Hidden from the list by policy; its name follows the same scheme.
  names.set('up/lookup', names.get('up/record')!.replace('record', 'lookup'));
});
after(async () => {
  await gw.close();
  await up.close();
  await bad.close();
});

let id = 0;
function send(method: string, params: Record<string, unknown>) {
  const req = modernRequest(++id, method, params);
  return post(gw.url, req.body, {
    ...req.headers,
    authorization: `Bearer ${ALICE}`,
  });
}
const callTool = (ref: string, args: Record<string, unknown>, meta?: Record<string, unknown>) =>
  send('tools/call', {
    name: names.get(ref) ?? ref,
    arguments: args,
    ...(meta ? { _meta: meta } : {}),
  });

async function records(): Promise<AuditRecord[]> {
  // A second reader beside the running gateway, as `gatehouse audit` is.
  const store = new SqliteStore(storePath);
  try {
    return await store.readAudit({ limit: 10_000 });
  } finally {
    await store.close();
  }
}

test('every governed call has its record, whatever its outcome, written before its answer', async () => {
  {
    const cases = [
      {
        ref: 'up/record',
        args: { item: 'Bearer abcdefghijklmnop', note: 'plain', github_token: 'token-named-argument' },
        meta: { idempotencyKey: 'audit-key-0001' },
        outcome: 'ok',
      },
      {
        ref: 'up/record_fails',
        args: { item: 'thing' },
        outcome: 'tool_error',
      },
      // Denied, so hidden from this caller: the answer says the tool does not exist; the record says what it was.
      {
        ref: 'up/lookup',
        args: { item: 'x' },
        outcome: 'refused',
        refusal: 'unknown_tool',
        stage: 'access',
      },
      {
        ref: 'up/record',
        args: { item: 42 },
        outcome: 'refused',
        refusal: 'invalid_arguments',
        stage: 'arguments',
      },
      { ref: 'bad/crash', args: {}, outcome: 'failed', stage: 'upstream' },
    ];
    for (const c of cases) {
      // The call was received and answered between these instants, however long it took.
      const sentAt = Date.now();
      const sentAtMono = performance.now();
      const res = await callTool(c.ref, c.args, c.meta);
      const answeredAtMono = performance.now();
      const answeredAt = Date.now();
      const callId = String(res.headers['x-gatehouse-call-id']);
      const body = res.json();
      const all = await records();
      const record = all.find((r) => r.callId === callId);
      assert.ok(record, `${c.ref}: a record for call ${callId} exists once the answer is in (${res.text})`);
      assert.equal(record.outcome, c.outcome, `${c.ref}: ${JSON.stringify(record)}`);
      if (c.refusal) assert.equal(record.refusal, c.refusal);
      if (c.stage) assert.equal(record.stage, c.stage);
      assert.equal(record.toolRef, c.ref);
      assert.equal(record.tool, names.get(c.ref));
      assert.equal(record.upstream, c.ref.split('/')[0]);
      assert.equal(record.subject, 'key:alice');
      assert.equal(record.keyId, 'alice');
      assert.equal(record.method, 'tools/call');
      // The latency runs from the request's arrival to its answer, both inside the call's own span of time
      // (rounded by the record to the microsecond).
      assert.ok(record.latencyMs >= 0 && record.latencyMs <= answeredAtMono - sentAtMono + 0.001, `${c.ref}: latency ${record.latencyMs} ms of a call that took ${answeredAtMono - sentAtMono} ms`);
      const recordedAt = Date.parse(record.time);
      assert.ok(recordedAt >= sentAt && recordedAt <= answeredAt, `${c.ref}: recorded at ${record.time}, for a call made between ${new Date(sentAt).toISOString()} and ${new Date(answeredAt).toISOString()}`);
      assert.equal(record.argumentsSha256, createHash('sha256').update(canonicalJson(c.args)).digest('hex'));
      // The run id goes back with every answer that has a result to carry it.
      const result = body.result as { _meta?: Record<string, unknown> } | undefined;
      if (result) assert.equal(result._meta?.['dev.gatehouse/run_id'], record.runId);
      // A JSON-RPC error has no _meta: the x-gatehouse-call-id header, which the record holds, names it.
      else assert.ok(body.error, res.text);
      assert.match(record.runId, /^[0-9a-f-]{36}$/);
    }
    const all = await records();
    const first = all.find((r) => r.toolRef === 'up/record' && r.outcome === 'ok')!;
    assert.deepEqual(first.arguments, { item: 'Bearer [redacted]', note: 'plain', github_token: '[redacted]' }, 'secrets are redacted from the stored arguments');
    assert.equal(first.idempotencyKey, 'audit-key-0001');
    assert.equal(verifyChain(all, undefined).ok, true);
  }
});

test('reads are not governed calls and leave no record; a replayed write is its own record', async () => {
  const before = (await records()).length;
  await send('tools/list', {});
  assert.equal((await records()).length, before);
  await callTool('up/record', { item: 'Bearer abcdefghijklmnop', note: 'plain', github_token: 'token-named-argument' }, { idempotencyKey: 'audit-key-0001' });
  const after = await records();
  assert.equal(after.length, before + 1);
  assert.equal(after.at(-1)!.outcome, 'ok');
  assert.equal(up.timesExecuted('audit-key-0001'), 1);
});

test('retention at start removes records past audit.retainDays; the chain verifies from its anchor', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'gatehouse-retain-')), 'audit.db');
  const seed = new SqliteStore(path);
  const old = Date.now() - 5 * 86_400_000;
  for (let i = 0; i < 4; i++)
    await seed.appendAudit({
      time: new Date(old + i).toISOString(),
      callId: `old-${i}`,
      runId: `r${i}`,
      subject: 'x',
      method: 'tools/call',
      outcome: 'ok',
      latencyMs: 1,
    });
  await seed.appendAudit({
    time: new Date().toISOString(),
    callId: 'recent',
    runId: 'r',
    subject: 'x',
    method: 'tools/call',
    outcome: 'ok',
    latencyMs: 1,
  });
  await seed.close();
  const g = await startGateway({
    upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
    store: { kind: 'sqlite', path },
    audit: { retainDays: 2 },
  });
  try {
    const store = new SqliteStore(path);
    try {
      // The prune runs as the gateway starts; bounded wait for it.
      let anchor;
      for (let i = 0; i < 50 && !anchor; i++) {
        anchor = await store.auditAnchor();
        if (!anchor) await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(anchor?.seq, 4);
      const req = modernRequest(1, 'tools/call', {
        name: 'lookup',
        arguments: { item: 'z' },
      });
      await post(g.url, req.body, req.headers);
      const left = await store.readAudit({});
      assert.deepEqual(left.map((r) => r.callId).slice(0, 1), ['recent']);
      assert.equal(left.length, 2);
      assert.deepEqual(verifyChain(left, anchor), {
        ok: true,
        records: 2,
        lastSeq: 6,
        lastHash: left[1]!.hash,
      });
    } finally {
      await store.close();
    }
  } finally {
    await g.close();
  }
});

test('audit.enabled: false answers tools/call without a record or a run id, and says so at start', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'gatehouse-audit-off-')), 'audit.db');
  const g = await startGateway({
    upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
    store: { kind: 'sqlite', path },
    audit: { enabled: false },
  });
  try {
    const req = modernRequest(1, 'tools/call', { name: 'lookup', arguments: { item: 'z' } });
    const res = await post(g.url, req.body, req.headers);
    assert.equal(res.status, 200, res.text);
    const result = res.json().result as { isError?: boolean; _meta?: Record<string, unknown> };
    assert.notEqual(result.isError, true, res.text);
    assert.equal(result._meta?.['dev.gatehouse/run_id'], undefined, 'no record, so no run id');
    assert.ok(g.logs.some((l) => String(l.msg).includes('the audit is off')), 'the start warns that calls go unrecorded');
    const store = new SqliteStore(path);
    try {
      assert.deepEqual(await store.readAudit({}), []);
    } finally {
      await store.close();
    }
  } finally {
    await g.close();
  }
});
