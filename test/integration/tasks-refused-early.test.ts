// A 2025-11-25 task-augmented tools/call (`params.task`) on a path that refuses core tasks (the era
// bridges, stdio `shared`/`single`, the catalog: protocol/core-tasks.ts) is refused -32601 (tasks.mdx
// §Tool-Level Negotiation: a task the server does not support is -32601). The refusal used to be made by the
// upstream adapter, after the rate limit, the budget and the approval stage: a call certain to be refused took
// a rate-limit token, spent a budget that was never given back, and under an approval rule opened an approval
// (reviewers were asked about a call that could never run, and the caller got approval_pending instead of
// -32601). The refusal now comes before those stages: the token, the budget and the reviewers are untouched,
// and the same call made plainly is served as if the refused one had never been made.
// Real upstreams: the v1 SDK's own task server over stdio (test/fixtures/upstreams/task-stdio.mjs), and the
// counting upstream (v1 legacy, v2 modern) over HTTP, which records every tools/call it receives.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { hashKey } from '../../src/auth/key-hash.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { TASK_STDIO } from '../fixtures/upstreams/task-tools.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, legacySession, modernRequest, post, rpc } from '../helpers/http.js';
import { gatewaysCheckedForLeakedChildren } from '../helpers/stdio-children.js';

const ALICE = 'gh_alice_early_0123456789abcdefghijklmn';
const AUTH = { authorization: `Bearer ${ALICE}` };
const ADMIN = 'admin-token-early-0123456789abcdef';
const METHOD_NOT_FOUND = -32601;

const upstreams: CountingUpstream[] = [];
const gateways = gatewaysCheckedForLeakedChildren(10_000, { alsoClose: upstreams });

async function counting(era: 'modern' | 'legacy'): Promise<CountingUpstream> {
  const up = await startCountingUpstream(era);
  upstreams.push(up);
  return up;
}

interface Path {
  /** The client's era. */
  era: 'legacy' | 'modern';
  /** The tool's name as the client calls it, and its ref in the policy. */
  tool: string;
  ref: string;
  /** The tool's arguments, carrying `marker`. */
  args(marker: string): Record<string, unknown>;
  /** The upstreams to configure, and the tools/call bodies the upstream received (undefined: not observable). */
  setUp(): Promise<{ upstreams: unknown[]; received?: () => string[] }>;
}

const PATHS: Record<string, Path> = {
  'a legacy client of a stdio server in processes: shared (the shared bridge)': {
    era: 'legacy',
    tool: 'report',
    ref: 'tasks/report',
    args: (secret) => ({ secret }),
    setUp: async () => ({ upstreams: [{ name: 'tasks', command: [process.execPath, TASK_STDIO], processes: 'shared' }] }),
  },
  'a modern client of a legacy HTTP server (the modern-client bridge)': {
    era: 'modern',
    tool: 'record',
    ref: 'up/record',
    args: (item) => ({ item }),
    setUp: async () => {
      const up = await counting('legacy');
      return { upstreams: [{ name: 'up', url: up.url }], received: () => up.received };
    },
  },
  'a legacy client of a modern HTTP server (the legacy-client bridge)': {
    era: 'legacy',
    tool: 'record',
    ref: 'up/record',
    args: (item) => ({ item }),
    setUp: async () => {
      const up = await counting('modern');
      return { upstreams: [{ name: 'up', url: up.url, era: 'modern' }], received: () => up.received };
    },
  },
  'a modern client of a catalog (two upstreams)': {
    era: 'modern',
    tool: 'one_record',
    ref: 'one/record',
    args: (item) => ({ item }),
    setUp: async () => {
      const [one, two] = [await counting('modern'), await counting('modern')];
      return { upstreams: [{ name: 'one', url: one.url, era: 'modern' }, { name: 'two', url: two.url, era: 'modern' }], received: () => one.received };
    },
  },
};

/** The JSON-RPC response in a JSON or SSE body. */
function responseIn(text: string): Record<string, any> {
  const trimmed = text.trim();
  if (trimmed.startsWith('{')) return JSON.parse(trimmed) as Record<string, any>;
  const messages = trimmed
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(5).trim())
    .filter((data) => data.startsWith('{'))
    .map((data) => JSON.parse(data) as Record<string, any>);
  const response = messages.find((m) => 'result' in m || 'error' in m);
  assert.ok(response, `no response in: ${text}`);
  return response;
}

/** What became of a call: `-32601` (a JSON-RPC error), a Gatehouse tool refusal's code, or `ran`. */
function fate(response: Record<string, any>): string {
  if (response.error) return String(response.error.code);
  const result = response.result ?? {};
  if (result.isError === true) return String(result.structuredContent?.error?.code ?? 'tool_error');
  return 'ran';
}

/** A client of the path's era, making calls to the gateway. */
async function caller(gw: TestGateway, path: Path): Promise<(params: Record<string, unknown>) => Promise<Record<string, any>>> {
  let n = 0;
  if (path.era === 'modern') {
    return async (params) => {
      const { body, headers } = modernRequest(++n, 'tools/call', params);
      const res = await post(gw.url, body, { ...headers, ...AUTH });
      assert.equal(res.status, 200, res.text);
      return responseIn(res.text);
    };
  }
  const session = await legacySession(gw.url, AUTH);
  const headers = { ...LEGACY_HEADERS, ...AUTH, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
  await post(gw.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), headers);
  return async (params) => {
    const res = await post(gw.url, rpc(++n, 'tools/call', params), headers);
    assert.equal(res.status, 200, res.text);
    return responseIn(res.text);
  };
}

async function gateway(path: Path, policy: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<{ gw: TestGateway; received?: () => string[] }> {
  const { upstreams: configured, received } = await path.setUp();
  const gw = await startGateway({
    auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }] },
    upstreams: configured,
    policy,
    ...extra,
  });
  gateways.push(gw);
  return { gw, ...(received ? { received } : {}) };
}

for (const [name, path] of Object.entries(PATHS)) {
  describe(`a task-augmented tools/call refused on ${name}`, () => {
    test('spends no rate-limit token and no budget: the same call made plainly after it runs, and the budget counts it alone', async () => {
      const storePath = join(mkdtempSync(join(tmpdir(), 'gatehouse-task-early-')), 'gatehouse.db');
      const { gw, received } = await gateway(
        path,
        {
          // One call an hour, one call a day: a refused task call that spent either leaves the plain call nothing.
          rateLimits: [{ id: 'one-an-hour', per: 'tool', rate: 1, perSeconds: 3600, burst: 1 }],
          budgets: [{ id: 'one-a-day', per: 'tool', window: 'day', limit: 1 }],
        },
        { store: { kind: 'sqlite', path: storePath } },
      );
      const call = await caller(gw, path);
      const task = await call({ name: path.tool, arguments: path.args('as-a-task'), task: { ttl: 60_000 } });
      assert.equal(fate(task), String(METHOD_NOT_FOUND), `the task call: ${JSON.stringify(task)}`);
      if (received) assert.deepEqual(received().filter((b) => b.includes('as-a-task')), [], 'the task call never went up');
      const store = new SqliteStore(storePath);
      try {
        assert.deepEqual(await store.listBudgets('budget:'), [], 'the refused task call spent no budget');
      } finally {
        await store.close();
      }
      const plain = await call({ name: path.tool, arguments: path.args('plainly') });
      assert.equal(fate(plain), 'ran', `the plain call after the refused one (rate_limited: the refusal took the token; budget_exhausted: it spent the budget): ${JSON.stringify(plain)}`);
    });

    test('opens no approval: the caller gets -32601, the reviewers are asked nothing', async () => {
      const { gw } = await gateway(path, { approvals: [{ id: 'review', tools: [path.ref] }] }, { admin: { enabled: true, port: 0, token: ADMIN } });
      const pending = async (): Promise<unknown[]> => {
        const res = await request(`${gw.gateway.adminUrl!}/approvals?state=pending`, { headers: { authorization: `Bearer ${ADMIN}` } });
        assert.equal(res.statusCode, 200);
        return ((await res.body.json()) as { approvals: unknown[] }).approvals;
      };
      const call = await caller(gw, path);
      const task = await call({ name: path.tool, arguments: path.args('as-a-task'), task: { ttl: 60_000 } });
      assert.equal(fate(task), String(METHOD_NOT_FOUND), `the task call (approval_pending: reviewers were asked about a call that could never run): ${JSON.stringify(task)}`);
      assert.deepEqual(await pending(), [], 'no approval was opened for the refused task call');
      // The rule does select the tool: the plain call is held for a reviewer.
      const plain = await call({ name: path.tool, arguments: path.args('plainly') });
      assert.equal(fate(plain), 'approval_pending', JSON.stringify(plain));
      assert.equal((await pending()).length, 1);
    });
  });
}

test('where tasks pass (a perSession stdio child, the client’s own; the audit off), a task call is still made, under the same policy', async () => {
  const path: Path = { ...PATHS['a legacy client of a stdio server in processes: shared (the shared bridge)']!, setUp: async () => ({ upstreams: [{ name: 'tasks', command: [process.execPath, TASK_STDIO], processes: 'perSession' }] }) };
  // (Under the audit no call is made as a task on any path: tasks-audit.test.ts.)
  const { gw } = await gateway(path, { rateLimits: [{ id: 'one-an-hour', per: 'tool', rate: 1, perSeconds: 3600, burst: 1 }] }, { audit: { enabled: false } });
  const call = await caller(gw, path);
  const task = await call({ name: path.tool, arguments: path.args('as-a-task'), task: { ttl: 60_000 } });
  assert.equal(typeof task.result?.task?.taskId, 'string', `a task was made: ${JSON.stringify(task)}`);
  // It ran, so it took the hour's one token.
  assert.equal(fate(await call({ name: path.tool, arguments: path.args('plainly') })), 'rate_limited');
});
