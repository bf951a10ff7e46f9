// Tool names a legacy client is shown where its tools/list is passed through (one legacy upstream, the audit
// off, no access rules on tools, outputValidation warn). Gatehouse gives clients only names of
// `[A-Za-z0-9_-]`, at most 64 characters (catalog/public-names.ts: safe for model APIs): one upstream whose
// list has another name is served through the catalog, under names rewritten. That check reads the upstream
// through the modern-client bridge, which leaves task-only tools (execution.taskSupport "required") out, so a
// task-only tool named `jobs.batch` (a valid name, tools.mdx §Tool Names) reached the client as it was, the
// one unsafe name in a list Gatehouse vouches for. The catalog could not serve it either (it carries no core
// tasks, protocol/core-tasks.ts), so the pass-through now leaves such a tool out, as the catalog would; the
// other task-only tools are listed and run as tasks. The upstream is the v1 SDK's own task support
// (test/fixtures/upstreams/task-tools.ts), the client the v1 SDK's.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { startGateway } from '../helpers/gateway.js';
import { gatewaysCheckedForLeakedChildren } from '../helpers/stdio-children.js';
import { TASK_STDIO, type TaskHttpServer, taskHttpUpstream } from '../fixtures/upstreams/task-tools.js';

const TIMEOUT_MS = 15_000;
const SAFE_NAME = /^[A-Za-z0-9_-]{1,64}$/;

const servers: TaskHttpServer[] = [];
const gateways = gatewaysCheckedForLeakedChildren(10_000, { alsoClose: servers });

const PATHS = {
  'the HTTP pass-through': () => taskHttpUpstream(servers, { taskOnly: true, taskOnlyDotted: true }),
  'a perSession stdio child': async () => ({ name: 'tasks', command: [process.execPath, TASK_STDIO, '--task-only', '--task-only-dotted'], processes: 'perSession' }),
} as const;

for (const path of Object.keys(PATHS) as Array<keyof typeof PATHS>) {
  describe(`task-only tool names, through ${path}`, () => {
    test('every listed name is safe: the task-only tool with a dotted name is left out, the others are listed and run', async () => {
      const gw = await startGateway({ audit: { enabled: false }, tools: { outputValidation: 'warn' }, upstreams: [await PATHS[path]()] });
      gateways.push(gw);
      const client = new Client({ name: 'tasks-unsafe-names', version: '1.0.0' }, { capabilities: {} });
      await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)), { timeout: TIMEOUT_MS });
      try {
        const names = (await client.listTools(undefined, { timeout: TIMEOUT_MS })).tools.map((t) => t.name).sort();
        assert.deepEqual(names.filter((n) => !SAFE_NAME.test(n)), [], `only safe names are listed: ${JSON.stringify(names)}`);
        assert.deepEqual(names, ['batch', 'client_capabilities', 'measure', 'report']);
        const created = await client.request({ method: 'tools/call', params: { name: 'batch', arguments: {}, task: { ttl: 60_000 } } }, CreateTaskResultSchema, { timeout: TIMEOUT_MS });
        const result = await client.request({ method: 'tasks/result', params: { taskId: created.task.taskId } }, CallToolResultSchema, { timeout: TIMEOUT_MS });
        assert.match(JSON.stringify(result.content), /batch done/);
      } finally {
        await client.close();
      }
    });
  });
}
