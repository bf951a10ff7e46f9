// 2025-11-25 core tasks where they pass through Gatehouse (the legacy pass-through to an HTTP server, a
// `perSession` stdio child), and the audit (audit.enabled, on by default: one record per tool call, written
// before its answer leaves). A task-augmented tools/call is answered with a CreateTaskResult, and the tool's
// own result comes later through tasks/result (basic/utilities/tasks.mdx §Creating Tasks, §Retrieving Task
// Results), a method that is no tool call: the audit recorded the CreateTaskResult as the call's output, and
// the result itself reached the client with no record at all. Under the audit such a call is now refused
// -32601 (tasks.mdx §Tool-Level Negotiation: a task the server does not support for a tool), recorded as a
// refusal, with nothing made upstream; the same tool called plainly runs and is recorded with its result.
// With the audit off (a pure pass-through whose record is kept elsewhere) tasks pass as before.
// The upstream is the v1 SDK's own task support (test/fixtures/upstreams/task-tools.ts).

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, ListTasksResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { TASK_STDIO, type TaskHttpServer, taskHttpUpstream } from '../fixtures/upstreams/task-tools.js';
import { startGateway } from '../helpers/gateway.js';
import { gatewaysCheckedForLeakedChildren } from '../helpers/stdio-children.js';
import { attempt } from '../helpers/tool-call.js';

const TIMEOUT_MS = 15_000;
const METHOD_NOT_FOUND = -32601;

const servers: TaskHttpServer[] = [];
const gateways = gatewaysCheckedForLeakedChildren(10_000, { alsoClose: servers });

const PATHS = {
  'the legacy HTTP pass-through': () => taskHttpUpstream(servers),
  'a perSession stdio child': async () => ({ name: 'tasks', command: [process.execPath, TASK_STDIO], processes: 'perSession' }),
} as const;

async function setUp(path: keyof typeof PATHS, audit: boolean): Promise<{ client: Client; storePath: string }> {
  const storePath = join(mkdtempSync(join(tmpdir(), 'gatehouse-task-audit-')), 'gatehouse.db');
  const gw = await startGateway({ audit: { enabled: audit }, store: { kind: 'sqlite', path: storePath }, upstreams: [await PATHS[path]()] });
  gateways.push(gw);
  const client = new Client({ name: 'tasks-audit', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)), { timeout: TIMEOUT_MS });
  // Under the audit no tool-call task is offered to the client (tasks-advertised.test.ts), which this test's
  // client ignores on purpose; without it the server's own capability reaches the client on this path.
  if (audit) assert.equal(client.getServerCapabilities()?.tasks, undefined, 'no tasks capability is advertised under the audit');
  else assert.ok(client.getServerCapabilities()?.tasks, 'the upstream’s tasks capability reaches the client on this path');
  return { client, storePath };
}

const asTask = (secret: string) => ({ method: 'tools/call' as const, params: { name: 'report', arguments: { secret }, task: { ttl: 60_000 } } });

for (const path of Object.keys(PATHS) as Array<keyof typeof PATHS>) {
  describe(`core tasks and the audit, through ${path}`, () => {
    test('audit on: a task-augmented call is refused -32601 and recorded as refused; no task is made, so no result can leave unrecorded through tasks/result', async () => {
      const { client, storePath } = await setUp(path, true);
      try {
        const created = await attempt(() => client.request(asTask('audited-secret'), CreateTaskResultSchema, { timeout: TIMEOUT_MS }));
        // Let a task that was made finish, so its result is there to be fetched.
        await new Promise((r) => setTimeout(r, 300));
        const tasks = (await client.request({ method: 'tasks/list', params: {} }, ListTasksResultSchema, { timeout: TIMEOUT_MS })).tasks;
        const fetched = await Promise.all(tasks.map((t) => client.request({ method: 'tasks/result', params: { taskId: t.taskId } }, CallToolResultSchema, { timeout: TIMEOUT_MS })));
        assert.deepEqual(fetched, [], 'a task was made, and its result fetched with tasks/result, which the audit does not record');
        assert.ok('code' in created && created.code === METHOD_NOT_FOUND, `refused -32601: ${JSON.stringify(created)}`);
        assert.match(created.message, /audit/);
        // The same tool called plainly runs, and its result is what the audit records.
        const plain = await client.request({ method: 'tools/call', params: { name: 'report', arguments: { secret: 'plain-secret' } } }, CallToolResultSchema, { timeout: TIMEOUT_MS });
        assert.match(JSON.stringify(plain.content), /report for plain-secret/);
        const store = new SqliteStore(storePath);
        try {
          // (The argument is named `secret`, so the record holds it redacted.)
          const records = (await store.readAudit({ limit: 100 })).map((r) => ({ tool: r.tool, outcome: r.outcome, refusal: r.refusal, stage: r.stage }));
          assert.deepEqual(records.sort((a, b) => a.outcome.localeCompare(b.outcome)), [
            { tool: 'report', outcome: 'ok', refusal: undefined, stage: undefined },
            { tool: 'report', outcome: 'refused', refusal: 'task_unaudited', stage: 'arguments' },
          ]);
        } finally {
          await store.close();
        }
      } finally {
        await client.close();
      }
    });

    test('audit off: tasks pass as before, and their result is fetched with tasks/result', async () => {
      const { client } = await setUp(path, false);
      try {
        const created = await client.request(asTask('unaudited'), CreateTaskResultSchema, { timeout: TIMEOUT_MS });
        const result = await client.request({ method: 'tasks/result', params: { taskId: created.task.taskId } }, CallToolResultSchema, { timeout: TIMEOUT_MS });
        assert.match(JSON.stringify(result.content), /report for unaudited/);
      } finally {
        await client.close();
      }
    });
  });
}
