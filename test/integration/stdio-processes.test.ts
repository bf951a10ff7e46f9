// How many child processes a stdio upstream costs (issue 15, item 6), counted as real processes (/proc:
// children of this test process whose PID the gateway logged starting), in each `processes` mode:
// - one SDK session is one child: the era probe's child serves it, Gatehouse lists tools on it, and no
//   child is started for a probe, a name check or an `initialize` that then exits;
// - a second session of the same caller: shared and single keep one child, perSession starts its own;
// - a session that declares other capabilities: shared starts a child for that set, single does not;
// - once the sessions ended, their children stop after `sessions.idleTimeoutMs`.
// Then `processes: single` with server-everything: one child for different callers and capability sets,
// elicitation reaches the caller that declared it, and a server request that cannot be tied to one call is
// refused as in shared mode (2026-07-28/basic/transports/stdio.mdx: one channel, many requests).

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { hashKey } from '../../src/auth/key-hash.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/otlp.js';
import { gatewaysCheckedForLeakedChildren, liveStdioChildren, stdioChildPids, waitUntil } from '../helpers/stdio-children.js';

const MEMORY = 'node_modules/@modelcontextprotocol/server-memory/dist/index.js';
const EVERYTHING = 'node_modules/@modelcontextprotocol/server-everything/dist/index.js';
const MODERN_STDIO = fileURLToPath(new URL('../fixtures/upstreams/modern-stdio-server.mjs', import.meta.url));
/** The shortest idle timeout the schema allows; sessions are swept every second. */
const IDLE_MS = 1_000;
/** Bound on the wait for idle children to stop: the timeout, two sweeps and a clean exit, with slack. */
const STOP_WAIT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 15_000;

// Anything a gateway left behind is stopped after the tests, by PID, and reported.
const gateways = gatewaysCheckedForLeakedChildren(STOP_WAIT_MS);

async function gateway(config: Record<string, unknown>): Promise<TestGateway> {
  const gw = await startGateway({ sessions: { idleTimeoutMs: IDLE_MS }, ...config });
  gateways.push(gw);
  return gw;
}

/** A v1 SDK client session that lists the tools and calls one, as a user's first steps would. */
async function session(gw: TestGateway, opts: { capabilities?: Record<string, unknown>; key?: string; call?: { name: string; arguments: Record<string, unknown> } } = {}): Promise<Client> {
  const client = new Client({ name: 'processes-test', version: '1.0.0' }, { capabilities: opts.capabilities ?? {} });
  if (opts.capabilities?.elicitation) client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'decline' }));
  const headers = opts.key ? { authorization: `Bearer ${opts.key}` } : undefined;
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url), headers ? { requestInit: { headers } } : {}), { timeout: REQUEST_TIMEOUT_MS });
  const tools = (await client.listTools(undefined, { timeout: REQUEST_TIMEOUT_MS })).tools.map((t) => t.name);
  const call = opts.call ?? { name: 'read_graph', arguments: {} };
  assert.ok(tools.includes(call.name), `${call.name} is listed: ${tools.join(', ')}`);
  const result = await client.callTool(call, undefined, { timeout: REQUEST_TIMEOUT_MS });
  assert.notEqual(result.isError, true, JSON.stringify(result));
  return client;
}

/** Children running now, and children ever started: equal when none was started only to exit. */
function counts(gw: TestGateway): { live: number; started: number } {
  return { live: liveStdioChildren(gw).length, started: stdioChildPids(gw).length };
}

/** Waits (bounded) for every child to stop once the sessions ended, and says how many are left. */
async function afterIdle(gw: TestGateway): Promise<number> {
  await waitUntil(() => liveStdioChildren(gw).length === 0, STOP_WAIT_MS);
  return liveStdioChildren(gw).length;
}

const MODES = [
  // one session, two sessions of the same caller, then a third declaring elicitation
  { processes: 'shared', expected: [1, 1, 2] },
  { processes: 'perSession', expected: [1, 2, 3] },
  { processes: 'single', expected: [1, 1, 1] },
] as const;

describe('children of a legacy stdio server (server-memory), per processes mode', () => {
  for (const { processes, expected } of MODES) {
    test(`processes: ${processes}: ${expected.join(' → ')} children, then none once the sessions ended and idled out`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'gatehouse-memory-'));
      const gw = await gateway({ upstreams: [{ name: 'memory', command: [process.execPath, MEMORY], env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') }, processes }] });
      const a = await session(gw);
      assert.deepEqual(counts(gw), { live: expected[0], started: expected[0] }, 'one SDK session: one child, and none started for the probe or the name check');
      const b = await session(gw);
      assert.deepEqual(counts(gw), { live: expected[1], started: expected[1] }, 'a second session of the same caller');
      const c = await session(gw, { capabilities: { elicitation: {} } });
      assert.deepEqual(counts(gw), { live: expected[2], started: expected[2] }, 'a session that declared elicitation');
      await Promise.all([a.close(), b.close(), c.close()]);
      assert.equal(await afterIdle(gw), 0, `children still running ${STOP_WAIT_MS} ms after the sessions ended (idleTimeoutMs ${IDLE_MS})`);
      // The next session starts a child again, and is served.
      const d = await session(gw);
      assert.equal(counts(gw).live, 1);
      await d.close();
    });
  }
});

describe('children of a modern stdio server, per processes mode', () => {
  for (const { processes } of MODES) {
    test(`processes: ${processes}: one child for two sessions, none started only to exit, none once idle`, async () => {
      const gw = await gateway({ upstreams: [{ name: 'modern', command: [process.execPath, MODERN_STDIO], processes }] });
      const call = { name: 'echo', arguments: { message: 'hi' } };
      const a = await session(gw, { call });
      assert.deepEqual(counts(gw), { live: 1, started: 1 }, 'the discover probe’s child serves everyone; the legacy question does not start another');
      const b = await session(gw, { call });
      assert.deepEqual(counts(gw), { live: 1, started: 1 });
      await Promise.all([a.close(), b.close()]);
      assert.equal(await afterIdle(gw), 0, `the child still runs ${STOP_WAIT_MS} ms after the sessions ended`);
    });
  }
});

describe('processes: single with server-everything', () => {
  const ALICE = 'gh_alice_processes_0123456789abcdefghij';
  const BOB = 'gh_bob_processes_0123456789abcdefghijkl';
  /** Elicitations each client was shown, by client name. */
  const shown = new Map<string, number>();

  async function connect(gw: TestGateway, name: string, key: string, answer?: string): Promise<Client> {
    const client = new Client({ name, version: '1.0.0' }, { capabilities: answer === undefined ? {} : { elicitation: {} } });
    if (answer !== undefined) {
      client.setRequestHandler(ElicitRequestSchema, async () => {
        shown.set(name, (shown.get(name) ?? 0) + 1);
        return { action: 'accept', content: { name: answer, check: true, confirmed: true } };
      });
    }
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${key}` } } }), { timeout: REQUEST_TIMEOUT_MS });
    return client;
  }

  test('two callers with different capabilities share the one child; elicitation reaches the caller that declared it, and is refused for the other', async () => {
    const gw = await gateway({
      auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }, { id: 'bob', hash: hashKey(BOB), scopes: [] }] },
      upstreams: [{ name: 'everything', command: [process.execPath, EVERYTHING, 'stdio'], processes: 'single' }],
    });
    const [a, b] = await Promise.all([connect(gw, 'alice-client', ALICE, 'Ada'), connect(gw, 'bob-client', BOB)]);
    try {
      const [ea, eb] = await Promise.all([
        a.callTool({ name: 'echo', arguments: { message: 'from alice' } }),
        b.callTool({ name: 'echo', arguments: { message: 'from bob' } }),
      ]);
      assert.match(JSON.stringify(ea.content), /from alice/);
      assert.match(JSON.stringify(eb.content), /from bob/);
      const progress: number[] = [];
      const long = await b.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 3 } }, undefined, { onprogress: (p) => progress.push(p.progress) });
      assert.ok(progress.length >= 2, `progress reached its caller: ${progress.join(',')}`);
      assert.match(JSON.stringify(long.content), /completed/i);
      const elicited = await a.callTool({ name: 'trigger-elicitation-request', arguments: {} });
      assert.match(JSON.stringify(elicited.content), /Ada/);
      // Bob declared no elicitation: the bridge declines for him (mrtr.mdx §Server Requirements 6).
      const refused = await b.callTool({ name: 'trigger-elicitation-request', arguments: {} });
      assert.doesNotMatch(JSON.stringify(refused.content), /Ada/);
      assert.equal(shown.get('bob-client') ?? 0, 0);
      assert.deepEqual(counts(gw), { live: 1, started: 1 }, 'one child for both callers and both capability sets');
      const opened = gw.logs.filter((l) => l.msg === 'legacy upstream session opened for modern clients');
      assert.equal(opened.length, 1, 'one upstream session');
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  test('an elicitation while another caller has a call in flight is refused, never shown to the wrong caller, as in shared mode', async () => {
    const gw = await gateway({
      auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }, { id: 'bob', hash: hashKey(BOB), scopes: [] }] },
      upstreams: [{ name: 'everything', command: [process.execPath, EVERYTHING, 'stdio'], processes: 'single' }],
    });
    const [c, d] = await Promise.all([connect(gw, 'client-c', ALICE, 'Cy'), connect(gw, 'client-d', BOB, 'Di')]);
    try {
      // In flight in the child once its first progress came (after 1 s of 2).
      let running = false;
      const long = c.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 2 } }, undefined, { onprogress: () => (running = true) });
      await waitFor('the long call to be running in the child', () => (running ? true : undefined));
      const elicited = await d.callTool({ name: 'trigger-elicitation-request', arguments: {} }).then(
        (r) => JSON.stringify(r),
        (err: unknown) => String(err),
      );
      await long;
      assert.equal(shown.get('client-c') ?? 0, 0, 'the other caller never saw the prompt');
      assert.doesNotMatch(elicited, /Di/, 'no answer was invented for it either');
      assert.ok(gw.logs.some((l) => l.msg === 'stdio upstream request refused: its call cannot be told'));
      assert.equal(counts(gw).started, 1);
    } finally {
      await Promise.all([c.close(), d.close()]);
    }
  });
});
