// One upstream, passed through, that starts listing a tool whose name the catalog rewrites (`get.user`): a
// client's next tools/list moves the upstream behind the catalog with no reload (SingleUpstream). The
// sessions opened on the pass-through are unknown to the catalog (their next request is answered 404), but
// until 5 December the GET stream such a session had open went on relaying what the upstream's session sent,
// here a log message naming the tool by the name the catalog no longer shows, until the client left. Now the
// switch ends the pass-through's streams as the reload that retires it does (pass-through-streams.ts): the
// client's GET stream ends, its reconnection meets the 404, and nothing more of the upstream's session
// reaches it.
// Upstream: the v1 SDK's server over Streamable HTTP (legacy era). Client: the v1 SDK's.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { McpServer as V1McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { validateConfigObject } from '../../src/config/load.js';
import { startV1HttpServer } from '../fixtures/upstreams/v1-http-server.js';
import { startGateway } from '../helpers/gateway.js';

const ENDED_LOG = 'the listening streams the pass-through opened were ended: the upstream is served through the catalog now';


/**
 * A legacy client (v1 SDK) that keeps the data of every log message it hears, and `log`, which has every
 * connected upstream session log `text`, `rounds` times or until `done()`, every 100 ms.
 */
function loggingReader(sessions: V1McpServer[]): { client: V1Client; heard: string[]; log(text: string, rounds: number, done?: () => boolean): Promise<void> } {
  const client = new V1Client({ name: 'reader', version: '1' });
  const heard: string[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => void heard.push(String(n.params.data)));
  // The client's reconnection and its next requests meet the 404 (the catalog does not know its session): expected.
  client.onerror = () => {};
  const log = async (text: string, rounds: number, done: () => boolean = () => false): Promise<void> => {
    for (let i = 0; i < rounds && !done(); i++) {
      for (const server of sessions) if (server.isConnected()) await server.server.sendLoggingMessage({ level: 'info', data: text }).catch(() => {});
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  return { client, heard, log };
}

test('a legacy client\'s GET stream on the pass-through ends when the upstream is moved behind the catalog without a reload', { timeout: 60_000 }, async () => {
  const sessions: V1McpServer[] = [];
  const register = (server: V1McpServer, name: string): void => void server.registerTool(name, { description: `the tool ${name}` }, async () => ({ content: [{ type: 'text', text: name }] }));
  const upstream = await startV1HttpServer(
    (server) => {
      register(server, 'get_user');
      sessions.push(server);
    },
    { logging: {} },
  );
  const gw = await startGateway({ upstreams: [{ name: 'users', url: upstream.url }] });
  const { client, heard, log } = loggingReader(sessions);
  try {
    await client.connect(new V1Transport(new URL(gw.url)));
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['get_user'], 'passed through: the upstream\'s own name');
    await log('before', 100, () => heard.includes('before'));
    assert.ok(heard.includes('before'), 'the GET stream relays the upstream session\'s messages');

    // Registered on a connected server, the tool is announced (list_changed) on each session's GET stream.
    for (const server of sessions) register(server, 'get.user');
    await client.listTools().catch(() => {});
    assert.ok(gw.logs.some((l) => l.msg === 'upstream now lists names that need rewriting; serving it through the catalog from now on'), 'the upstream is behind the catalog now');

    await log('get.user ran', 20);
    assert.ok(!heard.includes('get.user ran'), 'nothing the upstream\'s session sends after the switch reaches the client');
    assert.equal(gw.logs.find((l) => l.msg === ENDED_LOG)?.ended, 1, 'the switch ended the GET stream');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});

test('a reload whose rules hide a tool from everyone checks the names at once, and ends the pass-through\'s streams', { timeout: 60_000 }, async () => {
  const sessions: V1McpServer[] = [];
  const upstream = await startV1HttpServer(
    (server) => {
      for (const name of ['get_user', 'get_secret']) server.registerTool(name, { description: `the tool ${name}` }, async () => ({ content: [{ type: 'text', text: name }] }));
      sessions.push(server);
    },
    { logging: {} },
  );
  const upstreams = [{ name: 'users', url: upstream.url }];
  const gw = await startGateway({ upstreams });
  const { client, heard, log } = loggingReader(sessions);
  try {
    await client.connect(new V1Transport(new URL(gw.url)));
    await log('before', 100, () => heard.includes('before'));
    assert.ok(heard.includes('before'), 'the GET stream relays the upstream session\'s messages');

    // Rules that select no caller do not force the catalog (AccessPolicy.perCaller): the names check decides.
    const next = validateConfigObject({ auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0 }, upstreams, policy: { rules: [{ id: 'hide', access: 'deny', tools: ['users/get_secret'] }, { id: 'rest', access: 'allow', tools: ['*'] }] } }, 'test');
    assert.deepEqual(await gw.gateway.reload(next), []);
    for (let i = 0; i < 100 && !gw.logs.some((l) => l.msg === ENDED_LOG); i++) await new Promise((r) => setTimeout(r, 100));

    // No client lists: until 5 December the stream stayed open until one did.
    await log('get_secret ran', 20);
    assert.ok(!heard.includes('get_secret ran'), 'nothing the upstream\'s session sends after the reload reaches the client');
    assert.equal(gw.logs.find((l) => l.msg === ENDED_LOG)?.ended, 1, 'the check ended the GET stream');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});
