// A member that is down when a client opens its listen, and comes up while the listen is open: its tools
// join the catalog's list, which is a change of that list, so a client listening for tool-list changes is
// told (2026-07-28/server/tools.mdx §List Changed Notification; basic/patterns/subscriptions.mdx). Until
// 4 December the catalog tried a member's listen once, when the client's listen opened: a member down then
// was never listened to, and a client that had listed the tools never learnt that the late member's
// tools were there (nor of any later change of them) until it happened to list again.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request, type Dispatcher } from 'undici';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { readSseUntil } from '../helpers/sse.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { waitUntil } from '../helpers/stdio-children.js';

const EVERYTHING = { name: 'everything', command: [process.execPath, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'] };

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const listens: ServerResponse[] = [];

/** A 2026-07-28 server announcing tool-list changes: only "down" at first, which is why it is a fake. */
function lateMember(_req: IncomingMessage, res: ServerResponse, body: string): void {
  lateMemberAnswer({ toolsListChanged: true }, res, body);
}

/** Its answers, its listen honouring `honours` (nothing: a server that does not announce its own changes). */
function lateMemberAnswer(honours: Record<string, boolean>, res: ServerResponse, body: string): void {
  const msg = JSON.parse(body) as { id: unknown; method: string; params?: { notifications?: Record<string, unknown> } };
  if (msg.method === 'initialize') {
    // Not dual-era: the legacy handshake is refused, as 2026-07-28-only servers do.
    return void res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2026-07-28'], requested: '2025-11-25' } } }));
  }
  if (msg.method === 'subscriptions/listen') {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': msg.id }, notifications: honours } })}\n\n`);
    listens.push(res);
    return;
  }
  const results: Record<string, Record<string, unknown>> = {
    'server/discover': { supportedVersions: ['2026-07-28'], capabilities: { tools: { listChanged: true } }, ttlMs: 0, cacheScope: 'public' },
    'tools/list': { tools: [{ name: 'late_tool', inputSchema: { type: 'object' } }], ttlMs: 0, cacheScope: 'public' },
  };
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { resultType: 'complete', ...(results[msg.method] ?? {}) } }));
}

/**
 * A gateway in front of server-everything and of a member answering with `handler`, down (its port taken,
 * then closed) when the gateway starts. `comeUp` starts the member on that same address.
 */
async function gatewayWithMemberDown(handler: (req: IncomingMessage, res: ServerResponse, body: string) => void): Promise<{ gw: TestGateway; comeUp(): Promise<void> }> {
  const late: FakeUpstream = await startFakeUpstream(handler, { handshake: 'modern' });
  const { port } = late.server.address() as AddressInfo;
  await late.close();
  const gw = await startGateway({ upstreams: [EVERYTHING, { name: 'late', url: late.url }] });
  cleanups.push(() => gw.close());
  cleanups.push(() => late.close());
  return { gw, comeUp: () => new Promise<void>((r) => late.server.listen(port, '127.0.0.1', r)) };
}

/** A modern client's listen for tool-list changes, open until the tests end. */
async function listenForToolChanges(gw: TestGateway, id: number): Promise<Dispatcher.ResponseData> {
  const listen = modernRequest(id, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
  const ac = new AbortController();
  cleanups.push(async () => ac.abort());
  return request(gw.url, { method: 'POST', headers: listen.headers, body: listen.body, signal: ac.signal });
}

test('a member down when the listen opened: once it is up, the listening client is told the tool list changed', async () => {
  const { gw, comeUp } = await gatewayWithMemberDown(lateMember);

  const list = modernRequest(1, 'tools/list');
  const before = (await post(gw.url, list.body, list.headers)).json().result.tools as Array<{ name: string }>;
  assert.ok(before.some((t) => t.name === 'everything_echo') && !before.some((t) => t.name === 'late_late_tool'), 'the others are listed meanwhile');

  const res = await listenForToolChanges(gw, 7);
  const acked = await readSseUntil(res.body, (m) => m.length >= 1);
  assert.equal(acked[0]?.method, 'notifications/subscriptions/acknowledged');
  assert.equal(acked[0]?.params?.notifications?.toolsListChanged, true, JSON.stringify(acked));

  // The member comes up on its address.
  await comeUp();
  const told = await readSseUntil(res.body, (m) => m.some((x) => x.method === 'notifications/tools/list_changed'), 10_000);
  assert.ok(told.some((x) => x.method === 'notifications/tools/list_changed' && x.params?._meta?.['io.modelcontextprotocol/subscriptionId'] === 7), `told of the change: ${JSON.stringify(told)}`);
  const after = (await post(gw.url, list.body, list.headers)).json().result.tools as Array<{ name: string }>;
  assert.ok(after.some((t) => t.name === 'late_late_tool'), 'the late member\'s tool is listed');
  // And its later changes are relayed too: Gatehouse now listens to it.
  assert.ok(listens.length >= 1, 'the late member is listened to');
  listens.at(-1)!.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })}\n\n`);
  const again = await readSseUntil(res.body, (m) => m.some((x) => x.method === 'notifications/tools/list_changed'), 5_000);
  assert.ok(again.some((x) => x.method === 'notifications/tools/list_changed'), `a later change relayed: ${JSON.stringify(again)}`);
});

test('the same for a legacy client (v1 SDK) on its GET stream, through the legacy bridge', async () => {
  const { gw, comeUp } = await gatewayWithMemberDown(lateMember);
  const client = new Client({ name: 'late-member-legacy', version: '1.0.0' });
  let changes = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes++);
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
  cleanups.push(() => client.close());
  const before = (await client.listTools()).tools.map((t) => t.name);
  assert.ok(before.includes('everything_echo') && !before.includes('late_late_tool'), before.join(','));
  // The GET stream's listen reaches the catalog, which finds the member down (and tries it again from then
  // on): waited for (bounded), so that the member comes up only after that.
  const foundDown = () => gw.logs.some((l) => l.upstream === 'late' && l.msg === 'an upstream could not open its listen; it is tried again while the client listens');
  assert.ok(await waitUntil(foundDown, 10_000), `the client's listen found the member down: ${JSON.stringify(gw.logs.map((l) => l.msg))}`);
  // server-everything may announce changes of its own as its session starts, so a change alone does not
  // show that the member was listened to: the member's own listens are counted too.
  const baseline = changes;
  const listenedBefore = listens.length;
  await comeUp();
  assert.ok(await waitUntil(() => listens.length > listenedBefore, 10_000), 'the member that came up is listened to');
  assert.ok(await waitUntil(() => changes > baseline, 10_000), `the legacy client was told the tool list changed (${baseline} before the member came up)`);
  assert.ok((await client.listTools()).tools.some((t) => t.name === 'late_late_tool'));
});

test('a late member that announces no changes of its own still brings its tools: the listening client is told', async () => {
  const { gw, comeUp } = await gatewayWithMemberDown((_req, res, body) => lateMemberAnswer({}, res, body));
  // Listed first, as in the first test: server-everything may announce a change as its session starts.
  const first = modernRequest(1, 'tools/list');
  assert.ok(((await post(gw.url, first.body, first.headers)).json().result.tools as Array<{ name: string }>).some((t) => t.name === 'everything_echo'));
  const res = await listenForToolChanges(gw, 8);
  const acked = await readSseUntil(res.body, (m) => m.length >= 1);
  assert.equal(acked[0]?.params?.notifications?.toolsListChanged, true, JSON.stringify(acked));
  await comeUp();
  const told = await readSseUntil(res.body, (m) => m.some((x) => x.method === 'notifications/tools/list_changed'), 10_000);
  assert.ok(told.some((x) => x.method === 'notifications/tools/list_changed' && x.params?._meta?.['io.modelcontextprotocol/subscriptionId'] === 8), `told of the change: ${JSON.stringify(told)}`);
  const list = modernRequest(1, 'tools/list');
  assert.ok(((await post(gw.url, list.body, list.headers)).json().result.tools as Array<{ name: string }>).some((t) => t.name === 'late_late_tool'));
});
