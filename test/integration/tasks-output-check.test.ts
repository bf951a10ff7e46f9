// Output checks (tools.outputValidation) and 2025-11-25 core tasks, where tasks pass through Gatehouse: the
// legacy pass-through to an HTTP server and a `perSession` stdio child, each session the client's own.
// A task-augmented tools/call is answered with a CreateTaskResult, and the tool's result comes later through
// tasks/result (basic/utilities/tasks.mdx §Creating Tasks, §Retrieving Task Results), a method no stage
// reads. So the output stage cannot check what the tool returns, and must not judge the CreateTaskResult
// as if it were the tool's result (it has no structuredContent, and is no CallToolResult):
// - under `enforce` a tool that declares an outputSchema is not called as a task: -32601 (tasks.mdx
//   §Tool-Level Negotiation, a task the server does not support for that tool), before anything goes up,
//   and before an idempotency key is spent on it;
// - under `warn` the task is made, no "structuredContent is missing" drift is logged for it, and the log
//   says its output goes unchecked.
// Tools without an outputSchema are called as tasks as before. The upstream is the v1 SDK's own task
// support (test/fixtures/upstreams/task-tools.ts): `measure` declares {value: number} and answers
// {value: "high"}; `report` declares no outputSchema.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, ListTasksResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { gatewaysCheckedForLeakedChildren } from '../helpers/stdio-children.js';
import { attempt } from '../helpers/tool-call.js';
import { TASK_STDIO, type TaskHttpServer, taskHttpUpstream } from '../fixtures/upstreams/task-tools.js';

const TIMEOUT_MS = 15_000;
const METHOD_NOT_FOUND = -32601;

const servers: TaskHttpServer[] = [];
const gateways = gatewaysCheckedForLeakedChildren(10_000, { alsoClose: servers });

const PATHS = {
  'the HTTP pass-through': () => taskHttpUpstream(servers),
  'a perSession stdio child': async () => ({ name: 'tasks', command: [process.execPath, TASK_STDIO], processes: 'perSession' }),
} as const;

async function setUp(path: keyof typeof PATHS, outputValidation: 'enforce' | 'warn'): Promise<{ gw: TestGateway; client: Client }> {
  // `measure` counts as a write tool, so a key given with it is kept (idempotency.tools; keys optional).
  // The audit is off: under it no call is made as a task at all (tasks-audit.test.ts), and these are the
  // output checks' own refusals.
  const gw = await startGateway({ audit: { enabled: false }, tools: { outputValidation }, idempotency: { requireKeys: false, tools: ['tasks/measure'] }, upstreams: [await PATHS[path]()] });
  gateways.push(gw);
  const client = new Client({ name: 'tasks-output', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)), { timeout: TIMEOUT_MS });
  const tools = (await client.listTools(undefined, { timeout: TIMEOUT_MS })).tools;
  assert.ok(tools.find((t) => t.name === 'measure')?.outputSchema, 'measure declares an outputSchema');
  assert.ok(client.getServerCapabilities()?.tasks, 'the upstream’s tasks capability reaches the client here');
  return { gw, client };
}

const asTask = (name: string, args: Record<string, unknown> = {}) => ({ method: 'tools/call' as const, params: { name, arguments: args, task: { ttl: 60_000 } } });

for (const path of Object.keys(PATHS) as Array<keyof typeof PATHS>) {
  describe(`core tasks and output checks, through ${path}`, () => {
    test('outputValidation enforce: a tool with an outputSchema is not called as a task (-32601), and no task is made upstream', async () => {
      const { client } = await setUp(path, 'enforce');
      try {
        const created = await attempt(() => client.request(asTask('measure'), CreateTaskResultSchema, { timeout: TIMEOUT_MS }));
        // Let a task that was made finish, so what the client could fetch of it is there.
        await new Promise((r) => setTimeout(r, 300));
        const tasks = (await client.request({ method: 'tasks/list', params: {} }, ListTasksResultSchema, { timeout: TIMEOUT_MS })).tasks;
        const unchecked = await Promise.all(tasks.map((t) => client.request({ method: 'tasks/result', params: { taskId: t.taskId } }, CallToolResultSchema, { timeout: TIMEOUT_MS })));
        assert.deepEqual(unchecked.map((r) => r.structuredContent), [], `the tool ran as a task, and its unchecked output was fetched with tasks/result: ${JSON.stringify(unchecked)}`);
        assert.ok('code' in created && created.code === METHOD_NOT_FOUND, `refused -32601: ${JSON.stringify(created)}`);
        assert.match((created as { message: string }).message, /outputSchema/);
        // Refused before the idempotency stage: the key is not spent on the refusal, and the same call made
        // plainly with it runs (its output then checked: invalid_output), never the -32601 replayed.
        const key = { idempotencyKey: `task-key-${path.length}-0001` };
        const keyed = await attempt(() => client.request({ method: 'tools/call', params: { name: 'measure', arguments: {}, task: { ttl: 60_000 }, _meta: key } }, CreateTaskResultSchema, { timeout: TIMEOUT_MS }));
        assert.ok('code' in keyed && keyed.code === METHOD_NOT_FOUND, JSON.stringify(keyed));
        // (client.request, not callTool: the SDK client would judge the refusal's structuredContent itself.)
        const plain = await attempt(() => client.request({ method: 'tools/call', params: { name: 'measure', arguments: {}, _meta: key } }, CallToolResultSchema, { timeout: TIMEOUT_MS }));
        assert.match(JSON.stringify(plain), /invalid_output/, `the plain call with the same key ran and was checked: ${JSON.stringify(plain)}`);
        // A tool without an outputSchema is still called as a task, and its result fetched.
        const report = await client.request(asTask('report', { secret: 's1' }), CreateTaskResultSchema, { timeout: TIMEOUT_MS });
        const result = await client.request({ method: 'tasks/result', params: { taskId: report.task.taskId } }, CallToolResultSchema, { timeout: TIMEOUT_MS });
        assert.match(JSON.stringify(result.content), /report for s1/);
      } finally {
        await client.close();
      }
    });

    test('outputValidation enforce: tools/list says a tool with an outputSchema is not called as a task; the others are listed as the server wrote them', async () => {
      // tasks.mdx §Tool-Level Negotiation: "optional" tells a client it MAY invoke the tool as a task, and only
      // a "forbidden" one (or one without execution.taskSupport) is refused -32601. Until 4 December `measure`
      // was listed "optional" here while every task call to it was refused task_output_unchecked.
      const { client } = await setUp(path, 'enforce');
      try {
        const tools = (await client.listTools(undefined, { timeout: TIMEOUT_MS })).tools;
        const measure = tools.find((t) => t.name === 'measure');
        assert.equal(measure?.execution?.taskSupport, 'forbidden', JSON.stringify(measure));
        assert.ok(measure?.outputSchema, 'the rest of its definition is kept');
        assert.equal(tools.find((t) => t.name === 'report')?.execution?.taskSupport, 'optional', 'a tool without an outputSchema is still offered as a task');
        const refused = await attempt(() => client.request(asTask('measure'), CreateTaskResultSchema, { timeout: TIMEOUT_MS }));
        assert.ok('code' in refused && refused.code === METHOD_NOT_FOUND, JSON.stringify(refused));
      } finally {
        await client.close();
      }
    });

    test('outputValidation warn: the task is made; its CreateTaskResult is not reported as missing structuredContent, and the log says the output goes unchecked', async () => {
      const { gw, client } = await setUp(path, 'warn');
      try {
        const listed = (await client.listTools(undefined, { timeout: TIMEOUT_MS })).tools.find((t) => t.name === 'measure');
        assert.equal(listed?.execution?.taskSupport, 'optional', 'under warn it is offered as the server wrote it');
        const created = await client.request(asTask('measure'), CreateTaskResultSchema, { timeout: TIMEOUT_MS });
        assert.equal(typeof created.task.taskId, 'string');
        const drift = gw.logs.filter((l) => l.msg === 'tool output does not match its outputSchema');
        assert.deepEqual(drift, [], 'a CreateTaskResult is not the tool’s output');
        assert.ok(gw.logs.some((l) => l.msg === 'the output of a tool called as a task is not checked' && l.tool === 'measure'), 'the unchecked output is logged');
      } finally {
        await client.close();
      }
    });
  });
}
