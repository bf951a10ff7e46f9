// A call goes to the tool its policy judged. The resolve stage gives a tools/call its route (ref
// `upstream/original`), and access, pinning, arguments, limits and approval judge that ref; the catalog
// then forwards the call. Between the two the catalog may list again (another client's tools/list after a
// member's notifications/tools/list_changed, 2025-11-25/server/tools.mdx §List Changed Notification) and
// the public name may now belong to another upstream's tool. Until 5 December the catalog looked the
// public name up again and forwarded to whatever held it then: a call the user confirmed for one tool ran
// another. It forwards by the judged ref now, and answers -32602 when that ref is no longer listed
// (2026-07-28/server/tools.mdx §Error Handling: unknown tool).
//
// The window is realistic: a `by: user` approval holds a legacy client's call on its stream while the
// user is asked (elicitation), and the tool lists change meanwhile. Both upstreams are real v1 SDK servers.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { startV1HttpServer, type V1HttpServer } from '../fixtures/upstreams/v1-http-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { textOf } from '../helpers/v1-everything.js';

/** A v1 SDK server whose tools the test adds and removes on every live session (each change sends list_changed). */
interface LiveServer extends V1HttpServer {
  ran: string[];
  add(name: string): void;
  remove(name: string): void;
}

async function liveServer(label: string, initial: string[]): Promise<LiveServer> {
  const ran: string[] = [];
  const servers: McpServer[] = [];
  const registered = new Map<McpServer, Map<string, RegisteredTool>>();
  let current = [...initial];
  const register = (server: McpServer, name: string): void => {
    const tool = server.registerTool(name, { description: `${label} ${name}`, inputSchema: { id: z.string() } }, async ({ id }) => {
      ran.push(`${name} ${id}`);
      return { content: [{ type: 'text', text: `${label}/${name} ran on ${id}` }] };
    });
    registered.get(server)!.set(name, tool);
  };
  const up = await startV1HttpServer((server) => {
    servers.push(server);
    registered.set(server, new Map());
    for (const name of current) register(server, name);
  });
  return Object.assign(up, {
    ran,
    add(name: string) {
      current.push(name);
      for (const s of servers) register(s, name);
    },
    remove(name: string) {
      current = current.filter((n) => n !== name);
      for (const s of servers) registered.get(s)!.get(name)?.remove();
    },
  });
}

/** The public name of a ref in a tools/list through the gateway (modern client), or undefined. */
async function publicNameOf(gw: TestGateway, ref: string): Promise<string | undefined> {
  const { body, headers } = modernRequest('list', 'tools/list');
  const tools = (await post(gw.url, body, headers, AbortSignal.timeout(10_000))).json().result?.tools as Array<{ name: string; _meta?: Record<string, unknown> }>;
  return tools.find((t) => t._meta?.['dev.gatehouse/tool_ref'] === ref)?.name;
}

/** Lists through the gateway until `done` holds (the member's list_changed reached the catalog), at most 10 s. */
async function listUntil(done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error('the catalog never showed the changed lists');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A legacy (v1 SDK) client that declares elicitation; `onAsk` runs while the user is asked, then it accepts. */
async function confirmingClient(url: string, onAsk: () => Promise<void>): Promise<Client> {
  const client = new Client({ name: 'route-judged', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async () => {
    await onAsk();
    return { action: 'accept', content: { confirm: true } };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)), { timeout: 10_000 });
  return client;
}

describe('a tools/call is forwarded to the ref its policy judged, not to whatever holds its name at forward time', () => {
  let docs: LiveServer;
  let admin: LiveServer;
  let gw: TestGateway;
  before(async () => {
    docs = await liveServer('docs', ['archive.note']);
    admin = await liveServer('admin', ['status']);
    gw = await startGateway({
      upstreams: [
        { name: 'docs', url: docs.url },
        { name: 'admin', url: admin.url },
      ],
      // Without prefixes, admin's later `archive_note` (a safe name) takes `archive_note` from docs/archive.note.
      tools: { naming: { prefix: 'never' } },
      policy: { approvals: [{ id: 'confirm-docs', tools: ['docs/*'], by: 'user' }] },
      admin: { enabled: true, port: 0, token: 'admin-token-0123456789abcdef' },
    });
  });
  after(async () => {
    await gw.close();
    await docs.close();
    await admin.close();
  });

  test('the name passes to another upstream\'s tool while the user confirms: the confirmed tool (docs/archive.note) runs, admin/archive_note does not', async () => {
    assert.equal(await publicNameOf(gw, 'docs/archive.note'), 'archive_note');
    const client = await confirmingClient(gw.url, async () => {
      admin.add('archive_note');
      await listUntil(async () => (await publicNameOf(gw, 'admin/archive_note')) === 'archive_note');
    });
    try {
      const result = await client.callTool({ name: 'archive_note', arguments: { id: 'n-1' } }, undefined, { timeout: 20_000 });
      assert.equal(textOf(result), 'docs/archive.note ran on n-1', JSON.stringify(result));
      assert.deepEqual(docs.ran, ['archive.note n-1']);
      assert.deepEqual(admin.ran, [], 'a tool nobody approved ran');
      // docs/archive.note is still listed, under its digest name now.
      assert.match((await publicNameOf(gw, 'docs/archive.note')) ?? '', /^archive_note_[0-9a-f]{8}$/);
    } finally {
      await client.close();
      admin.remove('archive_note');
      await listUntil(async () => (await publicNameOf(gw, 'docs/archive.note')) === 'archive_note');
    }
  });

  test('the judged tool is gone when the call is forwarded: -32602 unknown tool, and the tool that took its name does not run', async () => {
    const client = await confirmingClient(gw.url, async () => {
      docs.remove('archive.note');
      admin.add('archive_note');
      await listUntil(async () => (await publicNameOf(gw, 'admin/archive_note')) === 'archive_note' && (await publicNameOf(gw, 'docs/archive.note')) === undefined);
    });
    const ranBefore = docs.ran.length;
    try {
      await assert.rejects(client.callTool({ name: 'archive_note', arguments: { id: 'n-2' } }, undefined, { timeout: 20_000 }), (err: Error & { code?: number }) => {
        assert.equal(err.code, -32602, err.message);
        assert.match(err.message, /Unknown tool: archive_note/);
        return true;
      });
      assert.deepEqual(admin.ran, [], 'a tool nobody approved ran');
      assert.equal(docs.ran.length, ranBefore);
    } finally {
      await client.close();
    }
  });
});
