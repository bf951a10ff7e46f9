// Access rules (policy.rules) and 2025-11-25 task-only tools (execution.taskSupport "required"), where a
// legacy client's tools/list is passed through (one legacy upstream whose names need no rewriting, the audit
// off). Gatehouse's own view of a legacy upstream comes through the modern-client bridge, which leaves
// task-only tools out (era-shapes.ts withoutTaskOnlyTools), so the check made before a list passes through
// (SingleUpstream: does any rule hide an item from everyone?) never saw them, and the upstream's list reached
// the client with them:
// - a rule that hid a task-only tool from everyone did not hide it: its name and definition were listed,
//   although a hidden item must be indistinguishable from one that does not exist (policy/access.ts);
// - under rules that allow it, it was listed, yet every call to it was -32602 "unknown tool": where rules
//   govern tools only a name Gatehouse's lists show may pass (the resolve stage), and no list of Gatehouse's
//   shows a task-only tool.
// Where rules govern tools a legacy client's tools/list now leaves task-only tools out, as the audit and
// `outputValidation: enforce` do (tasks-advertised.test.ts, tasks-output-offered.test.ts): none can be called
// there. The upstream is the v1 SDK's own task support (test/fixtures/upstreams/task-tools.ts, `batch`), the
// client the v1 SDK's.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { startGateway } from '../helpers/gateway.js';
import { gatewaysCheckedForLeakedChildren } from '../helpers/stdio-children.js';
import { attempt } from '../helpers/tool-call.js';
import { TASK_STDIO, type TaskHttpServer, taskHttpUpstream } from '../fixtures/upstreams/task-tools.js';

const TIMEOUT_MS = 15_000;
const INVALID_PARAMS = -32602;

const servers: TaskHttpServer[] = [];
const gateways = gatewaysCheckedForLeakedChildren(10_000, { alsoClose: servers });

const PATHS = {
  'the HTTP pass-through': () => taskHttpUpstream(servers, { taskOnly: true }),
  'a perSession stdio child': async () => ({ name: 'tasks', command: [process.execPath, TASK_STDIO, '--task-only'], processes: 'perSession' }),
} as const;

async function connect(path: keyof typeof PATHS, rules: unknown[]): Promise<Client> {
  const gw = await startGateway({ audit: { enabled: false }, policy: { rules }, upstreams: [await PATHS[path]()] });
  gateways.push(gw);
  const client = new Client({ name: 'tasks-access-listed', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)), { timeout: TIMEOUT_MS });
  return client;
}

const listed = async (client: Client): Promise<string[]> => (await client.listTools(undefined, { timeout: TIMEOUT_MS })).tools.map((t) => t.name).sort();

for (const path of Object.keys(PATHS) as Array<keyof typeof PATHS>) {
  describe(`task-only tools under access rules, through ${path}`, () => {
    test('a rule that hides the task-only tool from everyone hides it from tools/list', async () => {
      const client = await connect(path, [
        { id: 'no-batch', tools: ['tasks/batch'], access: 'deny' },
        { id: 'the-rest', tools: ['tasks/*'], access: 'allow' },
      ]);
      try {
        assert.deepEqual(await listed(client), ['client_capabilities', 'measure', 'report'], 'the hidden tool "batch" is not listed');
      } finally {
        await client.close();
      }
    });

    test('under rules that allow it, the task-only tool (which no call could reach) is not listed; the others are, and run', async () => {
      const client = await connect(path, [{ id: 'all', tools: ['tasks/*'], access: 'allow' }]);
      try {
        // Why it is left out: a call naming it is an unknown tool where rules govern tools.
        const call = await attempt(() => client.request({ method: 'tools/call', params: { name: 'batch', arguments: {}, task: { ttl: 60_000 } } }, CreateTaskResultSchema, { timeout: TIMEOUT_MS }));
        assert.ok('code' in call && call.code === INVALID_PARAMS, `-32602 unknown tool: ${JSON.stringify(call)}`);
        assert.deepEqual(await listed(client), ['client_capabilities', 'measure', 'report'], 'the uncallable task-only tool "batch" is not listed');
        const report = await client.request({ method: 'tools/call', params: { name: 'report', arguments: { secret: 'r' }, task: { ttl: 60_000 } } }, CreateTaskResultSchema, { timeout: TIMEOUT_MS });
        assert.equal(typeof report.task.taskId, 'string', 'a tool the rules allow still runs as a task');
      } finally {
        await client.close();
      }
    });
  });
}
