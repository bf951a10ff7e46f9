// What the legacy pass-through and the stdio demo tests both do with a v1 SDK client in front of
// server-everything: connect (optionally answering elicitation) and close the client whatever happens, check
// the tools it lists, read a tool result's text, and check that progress notifications are relayed one by
// one before the result (2025-11-25/basic/transports.mdx §Sending Messages 6).

import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type ElicitRequest } from '@modelcontextprotocol/sdk/types.js';

export interface Connected {
  client: Client;
  transport: StreamableHTTPClientTransport;
}

export async function connectV1(
  url: string,
  opts: { name: string; timeoutMs: number; elicitation?: (req: ElicitRequest) => Record<string, unknown>; headers?: Record<string, string> },
): Promise<Connected> {
  const transport = new StreamableHTTPClientTransport(new URL(url), opts.headers ? { requestInit: { headers: opts.headers } } : undefined);
  const client = new Client({ name: opts.name, version: '1.0.0' }, { capabilities: opts.elicitation ? { elicitation: {} } : {} });
  if (opts.elicitation) {
    const answer = opts.elicitation;
    client.setRequestHandler(ElicitRequestSchema, async (req) => answer(req) as never);
  }
  await client.connect(transport, { timeout: opts.timeoutMs });
  return { client, transport };
}

/** Hands the connection `connecting` makes to `use`, and closes its client however `use` ends. */
export async function withConnection<T>(connecting: Promise<Connected>, use: (connected: Connected) => Promise<T>): Promise<T> {
  const connected = await connecting;
  try {
    return await use(connected);
  } finally {
    await connected.client.close();
  }
}

/**
 * tools/list answered on the POST (LT §Sending Messages 5) names the tools of server-everything these tests
 * drive; the list, for further checks.
 */
export async function assertEverythingToolsListed(client: Client): Promise<Awaited<ReturnType<Client['listTools']>>['tools']> {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const expected of ['echo', 'trigger-long-running-operation', 'trigger-elicitation-request']) {
    assert.ok(names.includes(expected), `tools/list lacks ${expected}: ${names.join(', ')}`);
  }
  return tools;
}

export function textOf(result: unknown): string {
  const content = ((result as { content?: unknown }).content ?? []) as Array<{ type: string; text?: string }>;
  return content.filter((c) => c.type === 'text').map((c) => c.text ?? '').join('\n');
}

/**
 * Runs server-everything's long-running tool and checks its progress: every step, increasing, all before
 * the result; then that progress is relayed while the tool still runs (assertProgressBeforeTheToolEnds).
 */
export async function assertProgressRelayedOneByOne(client: Client): Promise<void> {
  const steps = 4;
  const events: Array<{ kind: 'progress' | 'result'; progress?: number }> = [];
  const result = await client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 1, steps } }, undefined, {
    timeout: 30_000,
    onprogress: (p) => events.push({ kind: 'progress', progress: p.progress }),
  });
  events.push({ kind: 'result' });
  assert.match(textOf(result), /Long running operation completed/);
  const progress = events.filter((e) => e.kind === 'progress');
  assert.equal(progress.length, steps, `expected ${steps} progress notifications, got ${progress.length}`);
  for (let i = 1; i < progress.length; i++) {
    assert.ok(progress[i]!.progress! > progress[i - 1]!.progress!, `progress not increasing: ${progress.map((p) => p.progress).join(', ')}`);
  }
  assert.equal(events.findIndex((e) => e.kind === 'result'), events.length - 1, 'a progress notification arrived after the result');
  await assertProgressBeforeTheToolEnds(client);
}

/**
 * Progress is relayed as the tool sends it, not held until its result: a call whose tool runs for
 * TOOL_RUNS_S (far longer than the test may), and which the client cancels once it has heard two steps.
 * A relay that buffered the stream until the result would give nothing before the client's timeout.
 */
async function assertProgressBeforeTheToolEnds(client: Client): Promise<void> {
  const TOOL_RUNS_S = 600;
  const heard: number[] = [];
  const cancel = new AbortController();
  const call = client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: TOOL_RUNS_S, steps: TOOL_RUNS_S * 4 } }, undefined, {
    timeout: 30_000,
    signal: cancel.signal,
    onprogress: (p) => {
      heard.push(p.progress);
      if (heard.length === 2) cancel.abort(new Error('heard two steps of a tool still running'));
    },
  });
  await assert.rejects(call, /heard two steps of a tool still running/, `no progress came while the tool ran (heard ${heard.join(', ') || 'nothing'})`);
  assert.deepEqual(heard.slice(0, 2), [1, 2]);
}

/**
 * server-everything's elicitation tool: its `elicitation/create` reaches the client on the call's stream
 * (§Sending Messages 6), and the client's answer, POSTed back (§Sending Messages 4), reaches the tool.
 */
export async function assertElicitationRoundTrip(
  connect: (opts: { elicitation: (req: ElicitRequest) => Record<string, unknown> }) => Promise<Connected>,
  answer: { name: string; check: boolean },
): Promise<void> {
  const seen: ElicitRequest[] = [];
  const connecting = connect({
    elicitation: (req) => {
      seen.push(req);
      return { action: 'accept', content: answer };
    },
  });
  await withConnection(connecting, async ({ client }) => {
    const result = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} }, undefined, { timeout: 30_000 });
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.params.message, 'Please provide inputs for the following fields:');
    const text = textOf(result);
    assert.match(text, /User provided the requested information/);
    assert.match(text, new RegExp(`- Name: ${answer.name}`));
    assert.match(text, new RegExp(`- Agreed to terms: ${answer.check}`));
  });
}
