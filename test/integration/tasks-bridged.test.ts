// 2025-11-25 core tasks (basic/utilities/tasks.mdx) where Gatehouse holds the client's session itself: stdio
// upstreams in `processes: shared` and `single` (a legacy client bridged onto the server's modern face) and
// modern clients of a legacy server. Gatehouse declares no `tasks` capability there (GATEWAY-REQUIREMENTS
// §16.1/§16.2: core tasks are not bridged), and cannot bind a task to its caller: the server sees Gatehouse
// as its one client, and in `single` every caller's calls share one child and its task store
// (tasks.mdx §Security Considerations, Task Isolation and Access Control). A task's result would also reach
// its caller through `tasks/result`, a method no stage governs: not audited, not output-checked.
// So a task-augmented request (`params.task`) and the tasks/* methods are refused there with -32601
// (tasks.mdx §Tool-Level Negotiation: a server answers a task-augmented call it does not support -32601),
// and never reach the child; the same tool called plainly still works.
// `processes: perSession` is left as it was: each legacy session has its own child, initialized by the client
// itself, so the child's tasks capability, and its tasks, are that session's alone.
// The upstream is the v1 SDK's own task support (test/fixtures/upstreams/task-stdio.mjs); its tool
// `report` may be called as a task or not.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, GetTaskResultSchema, ListTasksResultSchema, CancelTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { hashKey } from '../../src/auth/key-hash.js';
import { TASK_STDIO } from '../fixtures/upstreams/task-tools.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { gatewaysCheckedForLeakedChildren } from '../helpers/stdio-children.js';
import { attempt } from '../helpers/tool-call.js';

const ALICE = 'gh_alice_tasks_0123456789abcdefghijklmn';
const BOB = 'gh_bob_tasks_0123456789abcdefghijklmnopq';
const TIMEOUT_MS = 15_000;
const METHOD_NOT_FOUND = -32601;

const gateways = gatewaysCheckedForLeakedChildren();

async function gateway(processes: 'shared' | 'single' | 'perSession', extra: Record<string, unknown> = {}): Promise<TestGateway> {
  const gw = await startGateway({
    auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }, { id: 'bob', hash: hashKey(BOB), scopes: [] }] },
    upstreams: [{ name: 'tasks', command: [process.execPath, TASK_STDIO], processes }],
    ...extra,
  });
  gateways.push(gw);
  return gw;
}

async function connect(gw: TestGateway, key: string): Promise<Client> {
  const client = new Client({ name: 'tasks-test', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${key}` } } }), { timeout: TIMEOUT_MS });
  return client;
}

const taskCall = (secret: string) => ({ method: 'tools/call' as const, params: { name: 'report', arguments: { secret }, task: { ttl: 60_000 } } });

describe('core tasks where Gatehouse holds the session (stdio shared and single)', () => {
  test('processes: single: one caller never lists, reads or cancels another caller’s task; every tasks/* and a task-augmented call is -32601', async () => {
    const gw = await gateway('single');
    const [alice, bob] = await Promise.all([connect(gw, ALICE), connect(gw, BOB)]);
    try {
      assert.equal(alice.getServerCapabilities()?.tasks, undefined, 'no tasks capability is advertised');
      const created = await attempt(() => alice.request(taskCall('alice-secret'), CreateTaskResultSchema, { timeout: TIMEOUT_MS }));
      // The id Bob tries: Alice's, if a task was made, else one of the same shape.
      const taskId = 'result' in created ? (created.result as { task: { taskId: string } }).task.taskId : '0123456789abcdef0123456789abcdef';
      // Let a task that was made finish, so its result is there to be read.
      await new Promise((r) => setTimeout(r, 300));
      const seen = {
        list: await attempt(() => bob.request({ method: 'tasks/list', params: {} }, ListTasksResultSchema, { timeout: TIMEOUT_MS })),
        get: await attempt(() => bob.request({ method: 'tasks/get', params: { taskId } }, GetTaskResultSchema, { timeout: TIMEOUT_MS })),
        result: await attempt(() => bob.request({ method: 'tasks/result', params: { taskId } }, CallToolResultSchema, { timeout: TIMEOUT_MS })),
        cancel: await attempt(() => bob.request({ method: 'tasks/cancel', params: { taskId } }, CancelTaskResultSchema, { timeout: TIMEOUT_MS })),
      };
      assert.doesNotMatch(JSON.stringify(seen), /alice-secret/, `Bob got Alice's task result: ${JSON.stringify(seen.result)}`);
      assert.doesNotMatch(JSON.stringify(seen.list), new RegExp(taskId), `Bob listed Alice's task: ${JSON.stringify(seen.list)}`);
      for (const [method, answer] of Object.entries(seen)) {
        assert.ok('code' in answer && answer.code === METHOD_NOT_FOUND, `tasks/${method} for Bob: ${JSON.stringify(answer)}`);
      }
      assert.ok('code' in created && created.code === METHOD_NOT_FOUND, `a task-augmented call is refused: ${JSON.stringify(created)}`);
      // The same tool called plainly is served, for both.
      const plain = await alice.callTool({ name: 'report', arguments: { secret: 'plain' } }, undefined, { timeout: TIMEOUT_MS });
      assert.match(JSON.stringify(plain.content), /report for plain/);
      const own = await attempt(() => alice.request({ method: 'tasks/list', params: {} }, ListTasksResultSchema, { timeout: TIMEOUT_MS }));
      assert.ok('code' in own && own.code === METHOD_NOT_FOUND, `tasks/list for Alice: ${JSON.stringify(own)}`);
    } finally {
      await Promise.all([alice.close(), bob.close()]);
    }
  });

  test('processes: shared: a task-augmented call is -32601 too (its result would come back through tasks/result, unaudited and unchecked)', async () => {
    const gw = await gateway('shared');
    const alice = await connect(gw, ALICE);
    try {
      assert.equal(alice.getServerCapabilities()?.tasks, undefined);
      const created = await attempt(() => alice.request(taskCall('alice-secret'), CreateTaskResultSchema, { timeout: TIMEOUT_MS }));
      assert.ok('code' in created && created.code === METHOD_NOT_FOUND, `a task-augmented call is refused: ${JSON.stringify(created)}`);
      const result = await attempt(() => alice.request({ method: 'tasks/result', params: { taskId: '0123456789abcdef0123456789abcdef' } }, CallToolResultSchema, { timeout: TIMEOUT_MS }));
      assert.ok('code' in result && result.code === METHOD_NOT_FOUND, `tasks/result: ${JSON.stringify(result)}`);
    } finally {
      await alice.close();
    }
  });

  test('a modern client’s tools/call with params.task (a field 2026-07-28 does not have) is -32601, never a task made upstream that it cannot reach', async () => {
    const gw = await gateway('single');
    const { body, headers } = modernRequest(1, 'tools/call', { name: 'report', arguments: { secret: 'modern-secret' }, task: { ttl: 60_000 } });
    const res = await post(gw.url, body, { ...headers, authorization: `Bearer ${ALICE}` });
    const text = res.text;
    assert.doesNotMatch(text, /"taskId"/, `a task was made upstream: ${text}`);
    assert.match(text, /"code":-32601/, text);
    // The same call without params.task is served.
    const plain = modernRequest(2, 'tools/call', { name: 'report', arguments: { secret: 'modern-plain' } });
    const served = await post(gw.url, plain.body, { ...plain.headers, authorization: `Bearer ${ALICE}` });
    assert.match(served.text, /report for modern-plain/, served.text);
  });

  test('processes: perSession is untouched: tasks work on the caller’s own child, and another caller’s child has none of them', async () => {
    // With the audit off: under it no call is made as a task on any path (tasks-audit.test.ts).
    const gw = await gateway('perSession', { audit: { enabled: false } });
    const [alice, bob] = await Promise.all([connect(gw, ALICE), connect(gw, BOB)]);
    try {
      assert.ok(alice.getServerCapabilities()?.tasks, 'the child’s own tasks capability reaches its client');
      const created = await alice.request(taskCall('alice-secret'), CreateTaskResultSchema, { timeout: TIMEOUT_MS });
      const result = await alice.request({ method: 'tasks/result', params: { taskId: created.task.taskId } }, CallToolResultSchema, { timeout: TIMEOUT_MS });
      assert.match(JSON.stringify(result.content), /report for alice-secret/);
      const listed = await bob.request({ method: 'tasks/list', params: {} }, ListTasksResultSchema, { timeout: TIMEOUT_MS });
      assert.deepEqual(listed.tasks, [], 'Bob’s child never saw Alice’s task');
    } finally {
      await Promise.all([alice.close(), bob.close()]);
    }
  });

  describe('the refusal spends no idempotency key: the same call made plainly with the key runs', () => {
    // `report` counts as a write tool (idempotency.tools; keys optional), so a key given with it is kept. The
    // refused task never went up, as a request that never left (idempotency-stage.ts), so the key is free.
    // A glob over the upstream names: the cases below name their upstreams `tasks`, or `one` and `two`, and a ref
    // naming an upstream the config lacks is refused (config/tool-refs.ts).
    const writes = { idempotency: { requireKeys: false, tools: ['*/report'] } };

    test('a legacy client (stdio shared)', async () => {
      const gw = await gateway('shared', writes);
      const alice = await connect(gw, ALICE);
      try {
        const _meta = { idempotencyKey: 'legacy-task-key-0001' };
        const created = await attempt(() => alice.request({ method: 'tools/call', params: { ...taskCall('k1').params, _meta } }, CreateTaskResultSchema, { timeout: TIMEOUT_MS }));
        assert.ok('code' in created && created.code === METHOD_NOT_FOUND, JSON.stringify(created));
        const plain = await attempt(() => alice.request({ method: 'tools/call', params: { name: 'report', arguments: { secret: 'k1' }, _meta } }, CallToolResultSchema, { timeout: TIMEOUT_MS }));
        assert.match(JSON.stringify(plain), /report for k1/, `the plain call ran: ${JSON.stringify(plain)}`);
      } finally {
        await alice.close();
      }
    });

    const modernCall = async (gw: TestGateway, id: number, name: string, params: Record<string, unknown>) => {
      const { body, headers } = modernRequest(id, 'tools/call', { name, ...params });
      return (await post(gw.url, body, { ...headers, authorization: `Bearer ${ALICE}` })).text;
    };

    test('a modern client (the modern-client bridge)', async () => {
      const gw = await gateway('shared', writes);
      const _meta = { idempotencyKey: 'modern-task-key-0001' };
      const refusedText = await modernCall(gw, 1, 'report', { arguments: { secret: 'k2' }, task: { ttl: 60_000 }, _meta });
      assert.match(refusedText, /"code":-32601/, refusedText);
      const plain = await modernCall(gw, 2, 'report', { arguments: { secret: 'k2' }, _meta });
      assert.match(plain, /report for k2/, plain);
    });

    test('a modern client of a catalog (two stdio upstreams)', async () => {
      const gw = await startGateway({
        auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }] },
        upstreams: [
          { name: 'one', command: [process.execPath, TASK_STDIO] },
          { name: 'two', command: [process.execPath, TASK_STDIO] },
        ],
        ...writes,
      });
      gateways.push(gw);
      const _meta = { idempotencyKey: 'catalog-task-key-0001' };
      const list = modernRequest(1, 'tools/list');
      assert.match((await post(gw.url, list.body, { ...list.headers, authorization: `Bearer ${ALICE}` })).text, /one_report/);
      const refusedText = await modernCall(gw, 2, 'one_report', { arguments: { secret: 'k3' }, task: { ttl: 60_000 }, _meta });
      assert.match(refusedText, /"code":-32601/, refusedText);
      assert.doesNotMatch(refusedText, /"taskId"/);
      const plain = await modernCall(gw, 3, 'one_report', { arguments: { secret: 'k3' }, _meta });
      assert.match(plain, /report for k3/, plain);
    });
  });
});
