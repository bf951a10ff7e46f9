// A modern client's subscriptions/listen through the catalog (two upstreams) that holds no resource
// subscription, across a reload that changes the rules (a tool now hidden) and rebuilds one member (its
// headers changed). Until 5 December such a listen stayed on the retired catalog: it went on relaying what
// the retired member said, and never heard the rebuilt one. Now the reload takes it to the catalog it built
// (catalog/moving-listen.ts): on the same stream, the client is told its tool list changed, a tools/list
// shows the new rules, and the rebuilt member's list changes reach it.
// Upstreams: two v1 SDK servers over Streamable HTTP (legacy era); client: the v2 SDK's.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import type { McpServer as V1McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { validateConfigObject } from '../../src/config/load.js';
import { startV1HttpServer, type V1HttpServer } from '../fixtures/upstreams/v1-http-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

/** Long enough that the retired member still runs while the test looks (it is closed only after it). */
const GRACE_MS = 60_000;

const sessions: V1McpServer[] = [];
let files: V1HttpServer;
let more: V1HttpServer;

before(async () => {
  files = await startV1HttpServer((server) => {
    for (const name of ['visible', 'secret']) server.registerTool(name, { description: name }, async () => ({ content: [{ type: 'text', text: name }] }));
    sessions.push(server);
  });
  more = await startV1HttpServer((server) => {
    server.registerTool('other', { description: 'other' }, async () => ({ content: [{ type: 'text', text: 'other' }] }));
  });
});
after(async () => {
  await more?.close();
  await files?.close();
});

const upstreams = (generation: string): Array<Record<string, unknown>> => [
  { name: 'files', url: files.url, headers: { 'x-generation': generation } },
  { name: 'more', url: more.url },
];
const everything = [{ id: 'all', access: 'allow', tools: ['*'], resources: ['*'] }];

/** Has each of `servers` announce a tool list change until `heard()` passes `count` (bounded: 100 rounds). */
async function changesUntilHeard(servers: () => V1McpServer[], heard: () => number, count: number): Promise<void> {
  for (let i = 0; i < 100 && heard() <= count; i++) {
    for (const server of servers()) if (server.isConnected()) server.sendToolListChanged();
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Waits (bounded: 10 s) until `heard()` passes `count`. */
async function untilHeard(heard: () => number, count: number): Promise<void> {
  for (let i = 0; i < 100 && heard() <= count; i++) await new Promise((r) => setTimeout(r, 100));
}

test('a rules reload takes a listen with no resource subscription to the new catalog and its rebuilt member', { timeout: 90_000 }, async () => {
  const gw: TestGateway = await startGateway({ upstreams: upstreams('1'), policy: { rules: everything }, shutdown: { graceMs: GRACE_MS } });
  const client = new V2Client({ name: 'listener', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  let changes = 0;
  client.setNotificationHandler('notifications/tools/list_changed', async () => void changes++);
  try {
    await client.connect(new V2Transport(new URL(gw.url)));
    const listen = await client.listen({ toolsListChanged: true });
    assert.equal(listen.honoredFilter.toolsListChanged, true);
    await changesUntilHeard(() => sessions, () => changes, 0);
    assert.ok(changes > 0, 'before the reload the members\' changes arrive');
    assert.ok((await client.listTools()).tools.some((t) => t.name === 'files_secret'));

    const beforeReload = changes;
    const sessionsBefore = sessions.length;
    const next = validateConfigObject({ auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0 }, upstreams: upstreams('2'), shutdown: { graceMs: GRACE_MS }, policy: { rules: [{ id: 'no-secret', access: 'deny', tools: ['files/secret'] }, ...everything] } }, 'test');
    assert.deepEqual(await gw.gateway.reload(next), []);

    // No member says anything: the move itself tells the client its tool list may differ now.
    await untilHeard(() => changes, beforeReload);
    assert.ok(changes > beforeReload, 'a list change reaches the client after the reload');
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(!names.includes('files_secret'), `the new rules hide the tool: ${names.join(', ')}`);
    assert.ok(names.includes('files_visible'), names.join(', '));
    const moved = gw.logs.find((l) => l.msg === 'a reload moved modern listens to the catalog it built');
    assert.equal(moved?.moved, 1, 'the listen was moved');

    // The rebuilt member's sessions (opened since the reload) are heard on the same listen.
    const afterMove = changes;
    await changesUntilHeard(() => sessions.slice(sessionsBefore), () => changes, afterMove);
    assert.ok(sessions.length > sessionsBefore, 'the rebuilt member opened sessions of its own');
    assert.ok(changes > afterMove, 'the rebuilt member\'s list changes reach the listen');
    await listen.close();
  } finally {
    await client.close();
    await gw.close();
  }
});
