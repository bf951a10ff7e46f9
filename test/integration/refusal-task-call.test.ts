// Gatehouse's own refusal of a 2025-11-25 task-augmented tools/call (`params.task`), as the v1 SDK's client
// reads it. basic/utilities/tasks.mdx §Behavior Requirements: "Receivers that accept a task-augmented request
// MUST return a CreateTaskResult as the response"; one that does not accept it answers with a JSON-RPC error
// (§Error Handling: protocol errors, -32603 for internal ones). Core tasks pass where the client has the
// upstream session to itself and the audit is off (the legacy pass-through, perSession stdio children), so
// such a call meets the rate limits, budgets, egress rules and approvals. Until 4 December a refusal there was
// a CallToolResult (`isError`, structuredContent.error), which a client that asked for a task parses as a
// CreateTaskResult: the v1 SDK's callToolStream ended with "-32603 Task creation did not return a task", and
// the model never read `rate_limited`. Now it is a JSON-RPC error -32603 whose `data` carries the refusal's
// code, message, details and Gatehouse's `_meta` entries, as Gatehouse's failures do (errors.ts toWire).
// Real parts: the v1 SDK's task server (test/fixtures/upstreams/task-tools.ts) over Streamable HTTP and over
// stdio, and the v1 SDK's client.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startTaskHttpServer, TASK_STDIO, type TaskHttpServer } from '../fixtures/upstreams/task-tools.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const TIMEOUT_MS = 15_000;
const servers: TaskHttpServer[] = [];
const gateways: TestGateway[] = [];
after(async () => {
  for (const gw of gateways) await gw.close();
  for (const s of servers) await s.close();
});

type Message = { type: string; task?: unknown; result?: unknown; error?: { code?: number; message?: string; data?: Record<string, unknown> } };

/** The messages of one task-augmented call of `name` through the v1 SDK's callToolStream. */
async function taskCall(client: Client, name: string, args: Record<string, unknown>): Promise<Message[]> {
  const out: Message[] = [];
  for await (const m of client.experimental.tasks.callToolStream({ name, arguments: args }, undefined, { task: { ttl: 60_000 }, timeout: TIMEOUT_MS })) out.push(m as Message);
  return out;
}

const PATHS = {
  'the legacy pass-through (HTTP)': async () => {
    const up = await startTaskHttpServer();
    servers.push(up);
    return { name: 'up', url: up.url };
  },
  'a perSession stdio child': async () => ({ name: 'up', command: [process.execPath, TASK_STDIO], processes: 'perSession' }),
} as const;

for (const [label, upstream] of Object.entries(PATHS)) {
  describe(label, () => {
    test('a task call refused by a rate limit reaches the v1 client as an error that names rate_limited', async () => {
      const gw = await startGateway({
        audit: { enabled: false },
        upstreams: [await upstream()],
        policy: { rateLimits: [{ id: 'once', per: 'tool', rate: 1, perSeconds: 3600, burst: 1 }] },
      });
      gateways.push(gw);
      const client = new Client({ name: 'refusal-task', version: '1.0.0' }, { capabilities: { tasks: {} } as never });
      await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)), { timeout: TIMEOUT_MS });
      try {
        const first = await taskCall(client, 'report', { secret: 's' });
        assert.equal(first[0]?.type, 'taskCreated', `the first task call runs: ${JSON.stringify(first)}`);
        assert.equal(first.at(-1)?.type, 'result', JSON.stringify(first));
        const second = await taskCall(client, 'report', { secret: 's' });
        assert.equal(second.length, 1, JSON.stringify(second));
        const error = second[0]!.error;
        assert.equal(second[0]!.type, 'error');
        assert.equal(error?.code, -32603, JSON.stringify(second));
        assert.equal(error?.data?.code, 'rate_limited', `the refusal's code is readable: ${JSON.stringify(second)}`);
        assert.match(String(error?.message), /Rate limit "once" reached/);
        assert.equal(typeof error?.data?.['dev.gatehouse/retry_after'], 'number', "Gatehouse's _meta entries go with it");
        // The same tool called plainly is still answered with a tool result (tools.mdx §Error Handling).
        const plain = (await client.callTool({ name: 'report', arguments: { secret: 's' } }, undefined, { timeout: TIMEOUT_MS })) as { isError?: boolean; structuredContent?: { error?: { code?: string } } };
        assert.equal(plain.isError, true);
        assert.equal(plain.structuredContent?.error?.code, 'rate_limited');
      } finally {
        await client.close();
      }
    });
  });
}
