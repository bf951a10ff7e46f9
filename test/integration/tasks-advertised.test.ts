// What a legacy client is told of 2025-11-25 core tasks where they would pass (the legacy pass-through to an
// HTTP server, era auto or pinned; a `perSession` stdio child), while the audit refuses every task-augmented
// tools/call (-32601 task_unaudited, tasks-audit.test.ts). The server's initialize result and its tools/list
// went to the client as the server wrote them, so the client read `tasks.requests.tools.call` and a tool
// whose `execution.taskSupport` is "required", and could then never call that tool: as a task Gatehouse
// refuses it, plainly the server must (basic/utilities/tasks.mdx §Tool-Level Negotiation). Under the audit the
// client is now told what will be served: no `tasks` capability (§Capabilities: a party that supports
// task-augmented requests declares it; rule 1 of §Tool-Level Negotiation: without `tasks.requests.tools.call`
// a client MUST NOT use task augmentation), and no task-only tool in tools/list, as the modern-client bridge
// lists them. With the audit off both reach the client as the server wrote them.
// The upstream is the v1 SDK's own task support (test/fixtures/upstreams/task-tools.ts), the client the v1 SDK's.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { TASK_STDIO, startTaskHttpServer, type TaskHttpServer } from '../fixtures/upstreams/task-tools.js';
import { startGateway } from '../helpers/gateway.js';
import { gatewaysCheckedForLeakedChildren } from '../helpers/stdio-children.js';

const TIMEOUT_MS = 15_000;

const servers: TaskHttpServer[] = [];
const gateways = gatewaysCheckedForLeakedChildren(10_000, { alsoClose: servers });

async function httpServer(json = false): Promise<string> {
  const up = await startTaskHttpServer({ taskOnly: true, json });
  servers.push(up);
  return up.url;
}

const PATHS = {
  'the legacy HTTP pass-through (era auto)': async () => ({ name: 'tasks', url: await httpServer() }),
  'the legacy HTTP pass-through (era pinned legacy)': async () => ({ name: 'tasks', url: await httpServer(), era: 'legacy' }),
  // Its answers, initialize's with its Mcp-Session-Id header, as one JSON body rather than an SSE stream.
  'the legacy HTTP pass-through (JSON answers)': async () => ({ name: 'tasks', url: await httpServer(true) }),
  'a perSession stdio child': async () => ({ name: 'tasks', command: [process.execPath, TASK_STDIO, '--task-only'], processes: 'perSession' }),
} as const;

async function connect(path: keyof typeof PATHS, audit: boolean): Promise<Client> {
  const gw = await startGateway({ audit: { enabled: audit }, upstreams: [await PATHS[path]()] });
  gateways.push(gw);
  const client = new Client({ name: 'tasks-advertised', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)), { timeout: TIMEOUT_MS });
  return client;
}

for (const path of Object.keys(PATHS) as Array<keyof typeof PATHS>) {
  describe(`core tasks as advertised through ${path}`, () => {
    test('audit on: initialize shows no tasks capability and tools/list no task-only tool; the other tools are listed and callable', async () => {
      const client = await connect(path, true);
      try {
        const capabilities = client.getServerCapabilities();
        assert.equal(capabilities?.tasks, undefined, `tasks.mdx §Tool-Level Negotiation: no tasks.requests.tools.call where every task call is refused: ${JSON.stringify(capabilities)}`);
        assert.ok(capabilities?.tools, 'the rest of the capabilities is kept');
        const names = (await client.listTools(undefined, { timeout: TIMEOUT_MS })).tools.map((t) => t.name).sort();
        assert.deepEqual(names, ['client_capabilities', 'measure', 'report'], 'the task-only tool "batch" is not listed');
        const plain = await client.request({ method: 'tools/call', params: { name: 'report', arguments: { secret: 'listed' } } }, CallToolResultSchema, { timeout: TIMEOUT_MS });
        assert.match(JSON.stringify(plain.content), /report for listed/);
      } finally {
        await client.close();
      }
    });

    test('audit off: the server’s tasks capability and its task-only tool reach the client, and the tool runs as a task', async () => {
      const client = await connect(path, false);
      try {
        assert.ok(client.getServerCapabilities()?.tasks?.requests?.tools?.call, 'tasks.requests.tools.call as the server declared it');
        const tools = (await client.listTools(undefined, { timeout: TIMEOUT_MS })).tools;
        const batch = tools.find((t) => t.name === 'batch');
        assert.equal(batch?.execution?.taskSupport, 'required');
        const created = await client.request({ method: 'tools/call', params: { name: 'batch', arguments: {}, task: { ttl: 60_000 } } }, CreateTaskResultSchema, { timeout: TIMEOUT_MS });
        const result = await client.request({ method: 'tasks/result', params: { taskId: created.task.taskId } }, CallToolResultSchema, { timeout: TIMEOUT_MS });
        assert.match(JSON.stringify(result.content), /batch done/);
      } finally {
        await client.close();
      }
    });
  });
}
