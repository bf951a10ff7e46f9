// A legacy session belongs to the caller it was issued to, whoever presents its id later (2025-11-25
// security best practices §Session Hijacking: "bind session IDs to user-specific information"). Three attacks
// from a second caller with its own valid key, each tried where the upstream mints the ids (the pass-through)
// and where Gatehouse mints them (a legacy client bridged to a modern server, and a stdio server):
//   1. hijack: present the owner's id;
//   2. flood: present thousands of made-up ids, so a table that remembered them would push the owner's out;
//   3. pre-claim: present the id the upstream will issue next, before the owner's initialize gets it.
// Two real v1 SDK clients, two API keys.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { hashKey } from '../../src/auth/key-hash.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { textOf } from '../helpers/v1-everything.js';
import { LEGACY_HEADERS, rpc } from '../helpers/http.js';
import { startSequentialSessionsServer, type SequentialSessionsServer } from '../fixtures/upstreams/sequential-sessions-server.js';
import { startModernMatrixServer } from '../fixtures/upstreams/modern-matrix-server.js';

const KEY_A = 'gh_owner_key_0123456789abcdefghijklmnopqrst';
const KEY_B = 'gh_thief_key_0123456789abcdefghijklmnopqrst';
const EVERYTHING = 'node_modules/@modelcontextprotocol/server-everything/dist/index.js';
/** More made-up ids than the old table held (max(4 × sessions.max, 1024)), so a remembering table would evict. */
const FLOOD = 1_100;

interface Cell {
  name: string;
  upstream(): Promise<{ config: Record<string, unknown>; close(): Promise<void>; sequential?: SequentialSessionsServer }>;
  /** A call that works in a live session, and how to read the session it ran in (when the upstream tells). */
  call: { name: string; arguments: Record<string, unknown> };
}

const cells: Cell[] = [
  {
    name: 'pass-through (the upstream mints session ids)',
    async upstream() {
      const sequential = await startSequentialSessionsServer();
      return { config: { name: 'seq', url: sequential.url, era: 'legacy' }, close: () => sequential.close(), sequential };
    },
    call: { name: 'whoami', arguments: {} },
  },
  {
    name: 'legacy client → modern server (Gatehouse mints session ids)',
    async upstream() {
      const modern = await startModernMatrixServer({ legacy: 'reject' });
      return { config: { name: 'modern', url: modern.url }, close: () => modern.close() };
    },
    call: { name: 'echo', arguments: { message: 'mine' } },
  },
  {
    name: 'stdio server (Gatehouse mints session ids)',
    async upstream() {
      return { config: { name: 'everything', command: [process.execPath, EVERYTHING, 'stdio'] }, close: async () => {} };
    },
    call: { name: 'echo', arguments: { message: 'mine' } },
  },
];

type Fetch = (url: string | URL, init?: RequestInit) => Promise<Response>;

function transportFor(url: string, key: string, opts: { sessionId?: string; fetch?: Fetch } = {}): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${key}` } }, ...opts });
}

/**
 * A caller with its own session: a v1 client that initialized through the gateway. `onIssued` runs when
 * the initialize answer with the session id has arrived and before the client sends anything else, which
 * is the moment a thief who learned the id would strike.
 */
async function owner(url: string, onIssued?: (sessionId: string) => Promise<void>): Promise<{ client: Client; sessionId: string }> {
  const intercept: Fetch = async (target, init) => {
    const res = await fetch(target, init);
    const issued = res.headers.get('mcp-session-id');
    if (onIssued && issued !== null && typeof init?.body === 'string' && init.body.includes('"initialize"')) await onIssued(issued);
    return res;
  };
  const transport = transportFor(url, KEY_A, { fetch: intercept });
  const client = new Client({ name: 'owner', version: '1.0.0' });
  await client.connect(transport, { timeout: 15_000 });
  return { client, sessionId: transport.sessionId! };
}

/** A v1 client of the second caller that resumes someone else's session id instead of initializing. */
async function thief(url: string, sessionId: string): Promise<Client> {
  const client = new Client({ name: 'thief', version: '1.0.0' });
  // With a session id already set, the v1 client skips initialize, as it does to resume its own session.
  await client.connect(transportFor(url, KEY_B, { sessionId }), { timeout: 15_000 });
  return client;
}

async function legacySessionsGauge(gw: TestGateway): Promise<number> {
  const res = await request(gw.gateway.metricsUrl!);
  const text = await res.body.text();
  const line = text.split('\n').find((l) => l.startsWith('gatehouse_legacy_sessions '));
  return Number(line!.split(' ')[1]);
}

/** A ping naming a session, from the second caller; answers status and end reason. */
async function thiefPing(url: string, sessionId: string): Promise<{ status: number; reason: unknown }> {
  const res = await request(url, { method: 'POST', headers: { ...LEGACY_HEADERS, authorization: `Bearer ${KEY_B}`, 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': sessionId }, body: rpc('p', 'ping') });
  const body = (await res.body.json()) as { error?: { code: number; data?: { details?: { reason?: unknown } } } };
  return { status: res.statusCode, reason: body.error?.code === -32001 ? body.error.data?.details?.reason : body };
}

for (const cell of cells) {
  describe(`session ownership: ${cell.name}`, () => {
    let gw: TestGateway;
    let up: Awaited<ReturnType<Cell['upstream']>>;
    const clients: Client[] = [];

    before(async () => {
      up = await cell.upstream();
      gw = await startGateway({
        upstreams: [up.config],
        auth: { apiKeys: [{ id: 'owner', hash: hashKey(KEY_A), scopes: [] }, { id: 'thief', hash: hashKey(KEY_B), scopes: [] }] },
        sessions: { max: 2 },
        metrics: { enabled: true, port: 0 },
      });
    });
    after(async () => {
      for (const c of clients) await c.close().catch(() => {});
      await gw?.close();
      await up?.close();
    });

    test("hijack: the second caller presenting the owner's session id is refused, and the owner carries on", async () => {
      // The thief strikes right after the initialize answer, before the owner has used the id once.
      const a = await owner(gw.url, async (sessionId) => {
        const b = await thief(gw.url, sessionId);
        clients.push(b);
        await assert.rejects(b.callTool(cell.call), /Session not found.*"reason":"unknown"/);
        assert.deepEqual(await thiefPing(gw.url, sessionId), { status: 404, reason: 'unknown' });
        // Refused at the door: the upstream has not seen a single request naming the session yet.
        if (up.sequential) assert.equal(up.sequential.requests.filter((r) => r.session === sessionId).length, 0);
      });
      clients.push(a.client);
      assert.match(textOf(await a.client.callTool(cell.call)), /\S/);
      // And later too, once the owner has used it.
      assert.deepEqual(await thiefPing(gw.url, a.sessionId), { status: 404, reason: 'unknown' });

      // The owner's session is untouched.
      const again = textOf(await a.client.callTool(cell.call));
      if (up.sequential) assert.equal(again, a.sessionId);
      else assert.match(again, /mine/);
    });

    test('flood: thousands of made-up ids are refused, never remembered, and push nobody out', async () => {
      const a = await owner(gw.url);
      clients.push(a.client);
      const live = await legacySessionsGauge(gw);
      assert.ok(live >= 1);
      const ids = Array.from({ length: FLOOD }, () => randomUUID());
      const answers: Array<{ status: number; reason: unknown }> = [];
      for (let i = 0; i < ids.length; i += 50) answers.push(...(await Promise.all(ids.slice(i, i + 50).map((id) => thiefPing(gw.url, id)))));
      assert.ok(answers.every((r) => r.status === 404 && r.reason === 'unknown'), 'every made-up id is unknown');
      assert.equal(await legacySessionsGauge(gw), live, 'no made-up id entered the table');
      // The owner's binding is still there: the owner is served, the thief still is not.
      assert.match(textOf(await a.client.callTool(cell.call)), /\S/);
      assert.deepEqual(await thiefPing(gw.url, a.sessionId), { status: 404, reason: 'unknown' });
    });

    test('pre-claim: an id presented before it is issued is refused, and belongs to whoever it is issued to', async () => {
      // Where the upstream's ids are predictable, the thief asks for the very next one; Gatehouse's own
      // ids are random UUIDs, so there the thief can only present one it made up.
      const next = up.sequential?.nextSessionId() ?? randomUUID();
      const live = await legacySessionsGauge(gw);
      assert.deepEqual(await thiefPing(gw.url, next), { status: 404, reason: 'unknown' });
      assert.equal(await legacySessionsGauge(gw), live, 'the presented id did not enter the table');

      const a = await owner(gw.url);
      clients.push(a.client);
      if (up.sequential) assert.equal(a.sessionId, next, 'the owner was issued the id the thief tried to claim');
      assert.match(textOf(await a.client.callTool(cell.call)), /\S/);
      const seenBefore = up.sequential?.requests.filter((r) => r.session === next).length;
      assert.deepEqual(await thiefPing(gw.url, a.sessionId), { status: 404, reason: 'unknown' });
      if (up.sequential) assert.equal(up.sequential.requests.filter((r) => r.session === next).length, seenBefore, 'the thief reached the upstream');
      assert.match(textOf(await a.client.callTool(cell.call)), /\S/);
    });

    if (cell.name.startsWith('pass-through')) {
      test('the binding ends when the upstream no longer knows the session (its 404 passes through once)', async () => {
        const a = await owner(gw.url);
        clients.push(a.client);
        assert.match(textOf(await a.client.callTool(cell.call)), /\S/);
        await up.sequential!.forget(a.sessionId);
        await assert.rejects(a.client.callTool(cell.call), /Session not found/);
        const reached = up.sequential!.requests.filter((r) => r.session === a.sessionId).length;
        // From now on the gateway answers for the dead id itself, without asking the upstream.
        const late = await request(gw.url, { method: 'POST', headers: { ...LEGACY_HEADERS, authorization: `Bearer ${KEY_A}`, 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': a.sessionId }, body: rpc('late', 'ping') });
        assert.equal(late.statusCode, 404);
        assert.equal(((await late.body.json()) as { error: { data: { details: { reason: string } } } }).error.data.details.reason, 'unknown');
        assert.equal(up.sequential!.requests.filter((r) => r.session === a.sessionId).length, reached);
      });
    }

    test('the binding ends with the session: after DELETE the owner hears client_closed, the thief still unknown', async () => {
      const transport = transportFor(gw.url, KEY_A);
      const client = new Client({ name: 'owner', version: '1.0.0' });
      await client.connect(transport, { timeout: 15_000 });
      const sessionId = transport.sessionId!;
      const live = await legacySessionsGauge(gw);
      // The thief cannot end it either.
      const stolenDelete = await request(gw.url, { method: 'DELETE', headers: { authorization: `Bearer ${KEY_B}`, 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': sessionId } });
      await stolenDelete.body.dump();
      assert.equal(stolenDelete.statusCode, 404);
      assert.match(textOf(await client.callTool(cell.call)), /\S/);
      await transport.terminateSession();
      await client.close();
      assert.equal(await legacySessionsGauge(gw), live - 1);
      const late = await request(gw.url, { method: 'POST', headers: { ...LEGACY_HEADERS, authorization: `Bearer ${KEY_A}`, 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': sessionId }, body: rpc('late', 'ping') });
      assert.equal(late.statusCode, 404);
      assert.deepEqual(((await late.body.json()) as { error: unknown }).error, { code: -32001, message: 'Session not found; initialize a new session', data: { details: { reason: 'client_closed' } } });
      assert.deepEqual(await thiefPing(gw.url, sessionId), { status: 404, reason: 'unknown' });
    });
  });
}
