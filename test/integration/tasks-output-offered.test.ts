// Task-only tools (execution.taskSupport "required") under `tools.outputValidation: enforce` with the audit
// off, where tasks pass (the legacy pass-through to an HTTP server, a `perSession` stdio child).
// Gatehouse's routes of a legacy upstream come from its list read through the modern-client bridge, which
// leaves task-only tools out, so a call to one went up by name as an unlisted route, without schemas. The
// enforce rule "a tool with an outputSchema is not called as a task" (tasks-output-check.test.ts) looked at
// the route's outputSchema, found none, and let it run: `tally`, whose outputSchema the server declares,
// ran as a task and its result was fetched with tasks/result unchecked. Now a task call to a tool Gatehouse
// has no definition of is refused under `enforce` too (-32601 task_output_unchecked): it cannot tell that the
// tool has no outputSchema. Plainly the server refuses a task-only tool -32601 (basic/utilities/tasks.mdx
// §Tool-Level Negotiation, rule 2.3: it MUST be invoked as a task), so no task-only tool can run, and
// tools/list leaves them out (as under the audit, tasks-advertised.test.ts, and on the modern-client bridge).
// Under `warn` they are listed and run as tasks (their output then unchecked).
// The upstream is the v1 SDK's own task support (test/fixtures/upstreams/task-tools.ts: `tally` task-only
// with an outputSchema, `batch` task-only without), the client the v1 SDK's.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { gatewaysCheckedForLeakedChildren } from '../helpers/stdio-children.js';
import { attempt } from '../helpers/tool-call.js';
import { TASK_STDIO, type TaskHttpServer, taskHttpUpstream } from '../fixtures/upstreams/task-tools.js';

const TIMEOUT_MS = 15_000;
const METHOD_NOT_FOUND = -32601;

const servers: TaskHttpServer[] = [];
const gateways = gatewaysCheckedForLeakedChildren(10_000, { alsoClose: servers });

const PATHS = {
  'the HTTP pass-through': () => taskHttpUpstream(servers, { taskOnly: true, taskOnlyChecked: true }),
  'a perSession stdio child': async () => ({ name: 'tasks', command: [process.execPath, TASK_STDIO, '--task-only', '--task-only-checked'], processes: 'perSession' }),
} as const;

async function connect(path: keyof typeof PATHS, outputValidation: 'enforce' | 'warn'): Promise<{ client: Client; gw: TestGateway }> {
  const gw = await startGateway({ audit: { enabled: false }, tools: { outputValidation }, upstreams: [await PATHS[path]()] });
  gateways.push(gw);
  const client = new Client({ name: 'tasks-output-offered', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)), { timeout: TIMEOUT_MS });
  assert.ok(client.getServerCapabilities()?.tasks?.requests?.tools?.call, 'with the audit off the server’s tool-call tasks reach the client');
  return { client, gw };
}

const asTask = (name: string) => ({ method: 'tools/call' as const, params: { name, arguments: {}, task: { ttl: 60_000 } } });

for (const path of Object.keys(PATHS) as Array<keyof typeof PATHS>) {
  describe(`a task-only tool with an outputSchema, through ${path}`, () => {
    test('outputValidation enforce: a task-only tool is not called as a task, and not listed; the other tools are', async () => {
      const { client } = await connect(path, 'enforce');
      try {
        for (const name of ['tally', 'batch']) {
          const asTaskCall = await attempt(() => client.request(asTask(name), CreateTaskResultSchema, { timeout: TIMEOUT_MS }));
          if ('result' in asTaskCall) {
            // Let the task finish, and show what the client got past the output check.
            await new Promise((r) => setTimeout(r, 300));
            const taskId = (asTaskCall.result as { task: { taskId: string } }).task.taskId;
            const fetched = await client.request({ method: 'tasks/result', params: { taskId } }, CallToolResultSchema, { timeout: TIMEOUT_MS });
            assert.fail(`${name} ran as a task, its result fetched with tasks/result unchecked: ${JSON.stringify(fetched)}`);
          }
          assert.equal(asTaskCall.code, METHOD_NOT_FOUND, JSON.stringify(asTaskCall));
          assert.match(asTaskCall.message, /outputSchema/, 'task_output_unchecked');
          // Plainly the server refuses it (tasks.mdx §Tool-Level Negotiation, -32601; the v1 SDK's McpServer
          // words it as a tool error naming -32601): no way of calling it runs.
          const plainCall = await attempt(() => client.request({ method: 'tools/call', params: { name, arguments: {} } }, CallToolResultSchema, { timeout: TIMEOUT_MS }));
          const refusedPlainly = 'code' in plainCall ? plainCall.code === METHOD_NOT_FOUND : (plainCall.result as { isError?: boolean }).isError === true && /-32601/.test(JSON.stringify(plainCall.result));
          assert.ok(refusedPlainly, `plainly: the server's -32601: ${JSON.stringify(plainCall)}`);
        }

        const tools = (await client.listTools(undefined, { timeout: TIMEOUT_MS })).tools;
        assert.deepEqual(tools.map((t) => t.name).sort(), ['client_capabilities', 'measure', 'report'], 'the uncallable task-only tools are not listed');
        // The others as the server wrote them: `report` (no outputSchema) is still offered as a task, and runs as one.
        assert.equal(tools.find((t) => t.name === 'report')?.execution?.taskSupport, 'optional');
        const report = await client.request({ method: 'tools/call', params: { name: 'report', arguments: { secret: 's1' }, task: { ttl: 60_000 } } }, CreateTaskResultSchema, { timeout: TIMEOUT_MS });
        const result = await client.request({ method: 'tasks/result', params: { taskId: report.task.taskId } }, CallToolResultSchema, { timeout: TIMEOUT_MS });
        assert.match(JSON.stringify(result.content), /report for s1/);
      } finally {
        await client.close();
      }
    });

    test('outputValidation warn: the task-only tools are listed and run as tasks, and the log says their output goes unchecked', async () => {
      const { client, gw } = await connect(path, 'warn');
      try {
        const tools = (await client.listTools(undefined, { timeout: TIMEOUT_MS })).tools;
        const tally = tools.find((t) => t.name === 'tally');
        assert.equal(tally?.execution?.taskSupport, 'required');
        assert.ok(tally?.outputSchema);
        assert.equal(tools.find((t) => t.name === 'batch')?.execution?.taskSupport, 'required');
        const created = await client.request(asTask('tally'), CreateTaskResultSchema, { timeout: TIMEOUT_MS });
        const result = await client.request({ method: 'tasks/result', params: { taskId: created.task.taskId } }, CallToolResultSchema, { timeout: TIMEOUT_MS });
        assert.deepEqual(result.structuredContent, { count: 3 });
        // As for a listed tool with an outputSchema (tasks-output-check.test.ts): Gatehouse cannot tell this
        // one has none, so its operator is told the output went unchecked.
        assert.ok(gw.logs.some((l) => l.msg === 'the output of a tool called as a task is not checked' && l.tool === 'tally'), 'the unchecked output is logged');
      } finally {
        await client.close();
      }
    });
  });
}
