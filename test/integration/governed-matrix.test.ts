// The same checks on every path (DESIGN.md §7): whatever the upstream's transport, whichever era each side
// speaks, and whether one upstream or several sit behind Gatehouse, a tools/call is resolved, checked for
// access and checked for arguments before anything reaches the upstream. Matrix: {HTTP, stdio upstream} ×
// {legacy→legacy, modern→modern, modern→legacy, legacy→modern} × {one upstream, two}. In every cell:
//   - a denied tool answers exactly like an unknown one (tools.mdx §Error Handling: -32602);
//   - invalid arguments come back as an `invalid_arguments` tool result (DESIGN.md §2);
//   - the upstream saw neither call, and did see the valid one (a control).
// Both upstream eras are real SDK servers (v1 legacy, v2 modern-only) that record what they receive.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startGovernedHttpServer, type Received } from '../fixtures/upstreams/governed-tools.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, legacySession, modernRequest, post, rpc } from '../helpers/http.js';

const STDIO_FIXTURE = fileURLToPath(new URL('../fixtures/upstreams/governed-stdio.mjs', import.meta.url));
const RULES = [
  { id: 'no-secrets', access: 'deny', tools: ['a/secret'] },
  { id: 'everyone', access: 'allow', tools: ['*'] },
];

type Era = 'legacy' | 'modern';
interface Member {
  config: Record<string, unknown>;
  received(): Received[];
  close(): Promise<void>;
}

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-governed-'));
after(() => rmSync(dir, { recursive: true, force: true }));

async function member(name: string, transport: 'http' | 'stdio', era: Era): Promise<Member> {
  if (transport === 'http') {
    const server = await startGovernedHttpServer(era);
    return { config: { name, url: server.url }, received: () => server.received, close: () => server.close() };
  }
  const file = join(dir, `${name}-${era}-${Math.random().toString(36).slice(2)}.jsonl`);
  writeFileSync(file, '');
  return {
    config: { name, command: [process.execPath, STDIO_FIXTURE, era], env: { GOVERNED_RECORD: file } },
    received: () => readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Received),
    close: async () => {},
  };
}

/** A JSON answer, or the last message of an SSE one (a legacy server's pass-through answers as SSE). */
function answerOf(text: string): Record<string, any> {
  if (!text.startsWith('event:') && !text.startsWith('data:')) return JSON.parse(text) as Record<string, any>;
  const data = text.split('\n').filter((line) => line.startsWith('data:'));
  return JSON.parse(data[data.length - 1]!.slice(5)) as Record<string, any>;
}

/** A client of one era calling tools through the gateway, as raw HTTP so answers can be compared whole. */
async function caller(gw: TestGateway, era: Era): Promise<(id: number, name: string, args: Record<string, unknown>) => Promise<{ status: number; body: Record<string, any> }>> {
  if (era === 'modern') {
    return async (id, name, args) => {
      const req = modernRequest(id, 'tools/call', { name, arguments: args });
      const res = await post(gw.url, req.body, req.headers);
      return { status: res.status, body: res.json() };
    };
  }
  const session = await legacySession(gw.url);
  const headers = { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
  return async (id, name, args) => {
    const res = await post(gw.url, rpc(id, 'tools/call', { name, arguments: args }), headers);
    return { status: res.status, body: answerOf(res.text) };
  };
}

const PAIRS: Array<[Era, Era]> = [
  ['legacy', 'legacy'],
  ['modern', 'modern'],
  ['modern', 'legacy'],
  ['legacy', 'modern'],
];

for (const transport of ['http', 'stdio'] as const) {
  for (const [clientEra, upstreamEra] of PAIRS) {
    for (const count of [1, 2]) {
      describe(`${transport} upstream, ${clientEra} client → ${upstreamEra} server, ${count === 1 ? 'one upstream' : 'two upstreams'}`, () => {
        let gw: TestGateway;
        const members: Member[] = [];
        const tool = (name: string): string => (count === 1 ? name : `a_${name}`);

        before(async () => {
          for (const name of count === 1 ? ['a'] : ['a', 'b']) members.push(await member(name, transport, upstreamEra));
          gw = await startGateway({ upstreams: members.map((m) => m.config), policy: { rules: RULES } });
        });
        after(async () => {
          await gw?.close();
          for (const m of members) await m.close();
        });

        test('a denied tool answers exactly like an unknown one; invalid arguments are invalid_arguments; the upstream saw neither', async () => {
          const call = await caller(gw, clientEra);
          // The control: the path works, and the upstream sees what it should.
          const ok = await call(1, tool('add'), { a: 1, b: 2 });
          assert.equal(ok.status, 200, JSON.stringify(ok.body));
          assert.equal(ok.body.result?.content?.[0]?.text, '3', JSON.stringify(ok.body));

          const unknown = await call(2, tool('nosuch'), {});
          const denied = await call(2, tool('secret'), {});
          assert.equal(denied.status, unknown.status);
          assert.equal(unknown.body.error?.code, -32602, JSON.stringify(unknown.body));
          assert.deepEqual(JSON.parse(JSON.stringify(denied.body).replaceAll(tool('secret'), '<name>')), JSON.parse(JSON.stringify(unknown.body).replaceAll(tool('nosuch'), '<name>')));

          const invalid = await call(3, tool('add'), { a: 'one', b: 2 });
          assert.equal(invalid.status, 200);
          const result = invalid.body.result;
          assert.equal(result?.isError, true, JSON.stringify(invalid.body));
          assert.equal(result.structuredContent.error.code, 'invalid_arguments');
          assert.match(result.structuredContent.error.message, /\/a must be number/);
          assert.equal(result.resultType, clientEra === 'modern' ? 'complete' : undefined);

          const calls = members.flatMap((m) => m.received()).filter((r) => r.method === 'tools/call');
          assert.ok(calls.some((c) => c.name === 'add' && (c.arguments as { a?: unknown }).a === 1), `the valid call reached the upstream: ${JSON.stringify(calls)}`);
          assert.deepEqual(calls.filter((c) => c.name === 'secret' || c.name === 'nosuch'), [], 'the denied and the unknown tool never reached an upstream');
          assert.deepEqual(calls.filter((c) => (c.arguments as { a?: unknown }).a === 'one'), [], 'the invalid arguments never reached an upstream');
        });
      });
    }
  }
}

describe('a same-era single upstream, no access rules: the pass-through', () => {
  for (const era of ['legacy', 'modern'] as const) {
    test(`${era}: the client's body bytes reach the upstream unchanged, and invalid arguments are still refused`, async () => {
      const server = await startGovernedHttpServer(era);
      const gw = await startGateway({ upstreams: [{ name: 'a', url: server.url, era }] });
      try {
        // Odd spacing and key order: only a byte-for-byte relay keeps them.
        const headers = era === 'modern' ? modernRequest(5, 'tools/call', { name: 'add' }).headers : { ...LEGACY_HEADERS, 'mcp-session-id': await legacySession(gw.url), 'mcp-protocol-version': '2025-11-25' };
        const meta = era === 'modern' ? ', "_meta": {"io.modelcontextprotocol/clientCapabilities": {}, "io.modelcontextprotocol/protocolVersion": "2026-07-28"}' : '';
        const body = `{ "params": {"arguments": {"b": 2,  "a": 40}, "name": "add"${meta}},"method":"tools/call",  "id": 5, "jsonrpc": "2.0" }`;
        const res = await post(gw.url, body, headers);
        assert.equal(res.status, 200, res.text);
        assert.match(res.text, /42/);
        assert.ok(server.bodies.includes(body), 'the exact bytes were forwarded');
        const invalid = await post(gw.url, body.replace('"a": 40', '"a": "forty"').replace('"id": 5', '"id": 6'), headers);
        assert.equal(invalid.json().result.structuredContent.error.code, 'invalid_arguments');
        assert.ok(!server.bodies.some((b) => b.includes('forty')), 'the invalid call was not forwarded');
      } finally {
        await gw.close();
        await server.close();
      }
    });
  }
});

describe('a single upstream under access rules that select no caller (AccessPolicy.perCaller)', () => {
  const listTools = async (gw: TestGateway, headers: Record<string, string>): Promise<string[]> => {
    const res = await post(gw.url, rpc(9, 'tools/list'), headers);
    assert.ok(answerOf(res.text).result, res.text);
    return (answerOf(res.text).result.tools as Array<{ name: string }>).map((t) => t.name).sort();
  };

  test('rules that hide none of its tools keep the byte pass-through; a call to a denied name is still refused as unknown', async () => {
    const server = await startGovernedHttpServer('legacy');
    const gw = await startGateway({ upstreams: [{ name: 'a', url: server.url }], policy: { rules: [{ id: 'no-admin', access: 'deny', tools: ['a/admin_*'] }, { id: 'everyone', access: 'allow', tools: ['*'] }] } });
    try {
      const headers = { ...LEGACY_HEADERS, 'mcp-session-id': await legacySession(gw.url), 'mcp-protocol-version': '2025-11-25' };
      assert.deepEqual(await listTools(gw, headers), ['add', 'secret']);
      const body = `{"jsonrpc":"2.0",  "id": 11, "method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":1}}}`;
      const res = await post(gw.url, body, headers);
      assert.match(res.text, /"2"/);
      assert.ok(server.bodies.includes(body), 'the exact bytes were forwarded: the pass-through, not the catalog bridge');
      const denied = await post(gw.url, rpc(12, 'tools/call', { name: 'admin_reset', arguments: {} }), headers);
      assert.equal(answerOf(denied.text).error?.code, -32602);
      assert.ok(!server.received.some((r) => r.name === 'admin_reset'), 'the denied call never reached the upstream');
    } finally {
      await gw.close();
      await server.close();
    }
  });

  test('a rule that hides one of its tools sends it through the catalog: the list leaves the tool out', async () => {
    const server = await startGovernedHttpServer('legacy');
    const gw = await startGateway({ upstreams: [{ name: 'a', url: server.url }], policy: { rules: [{ id: 'no-secrets', access: 'deny', tools: ['a/secret'] }, { id: 'everyone', access: 'allow', tools: ['*'] }] } });
    try {
      const headers = { ...LEGACY_HEADERS, 'mcp-session-id': await legacySession(gw.url), 'mcp-protocol-version': '2025-11-25' };
      assert.deepEqual(await listTools(gw, headers), ['add']);
    } finally {
      await gw.close();
      await server.close();
    }
  });
});
