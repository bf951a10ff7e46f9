// Egress judging of what is a host by its shape alone. A dotted word in free text (`report.txt`, `main.py`,
// `notes.md`) and a URL in a scheme no client is known to fetch (`note://daily/2026-12-05`, a server's own
// identifier) were judged as host names, and, resolving nowhere, blocked: a filesystem tool's
// `read_file { path: "report.txt" }` was refused `egress_blocked` under the default rules. Such a reading is
// now judged only when the name resolves (or is an IP address); what the arguments plainly give as a
// destination (a URL of a fetched scheme, a field named or declared as one) is still blocked unresolved. A
// completion's value, still being typed, is read the same way. The upstream is the v1 SDK's McpServer
// (recording every message), the client the v1 SDK's, the resolver a stand-in (no DNS here).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { completable } from '@modelcontextprotocol/sdk/server/completable.js';
import { z } from 'zod';
import { startV1HttpServer, type V1HttpServer } from '../fixtures/upstreams/v1-http-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

/** Names an attacker's DNS points inside, and one that resolves to a public address. */
const DNS: Readonly<Record<string, string[]>> = { 'inside.attacker.test': ['10.0.0.9'], 'db.inside.test': ['10.0.0.7'], 'docs.partner.example': ['93.184.216.34'] };
const resolveHost = async (host: string): Promise<string[]> => {
  const found = DNS[host];
  if (!found) throw Object.assign(new Error(`ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return found;
};

let up: V1HttpServer;
let gw: TestGateway;
let client: Client;
before(async () => {
  up = await startV1HttpServer((server) => {
    server.registerTool('read_file', { description: 'Reads a file', inputSchema: { path: z.string() } }, ({ path }) => ({ content: [{ type: 'text', text: `read ${path}` }] }));
    server.registerTool('open_note', { description: 'Opens a note by its URI', inputSchema: { noteUri: z.string() } }, ({ noteUri }) => ({ content: [{ type: 'text', text: `opened ${noteUri}` }] }));
    server.registerTool('fetch', { description: 'Fetches a URL', inputSchema: { url: z.string() } }, ({ url }) => ({ content: [{ type: 'text', text: `fetched ${url}` }] }));
    server.registerPrompt('summarize', { description: 'Summarize a page', argsSchema: { page: completable(z.string(), (value) => [`${value}/index.html`]) } }, ({ page }) => ({
      messages: [{ role: 'user', content: { type: 'text', text: `Summarize ${page}` } }],
    }));
  });
  gw = await startGateway({ upstreams: [{ name: 'up', url: up.url }] }, { resolveHost });
  client = new Client({ name: 'guessed-hosts', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
});
after(async () => {
  await client.close();
  await gw.close();
  await up.close();
});

const reached = (tool: string, value: string) => up.messages.filter((m) => m.method === 'tools/call' && m.params?.name === tool && JSON.stringify(m.params?.arguments).includes(JSON.stringify(value))).length;

async function call(name: string, args: Record<string, string>) {
  return (await client.callTool({ name, arguments: args })) as { isError?: boolean; content: Array<{ text: string }>; structuredContent?: { error?: { code?: string } } };
}

describe('hosts read by their shape alone (egress/destinations.ts `guess`)', () => {
  test('file names in free text reach the tool; an address, or a name resolving inside, is still blocked', async () => {
    for (const path of ['report.txt', 'main.py', 'notes.md', 'src/index.ts']) {
      const res = await call('read_file', { path });
      assert.notEqual(res.isError, true, `${path}: ${JSON.stringify(res)}`);
      assert.equal(res.content[0]!.text, `read ${path}`);
      assert.equal(reached('read_file', path), 1, path);
    }
    for (const path of ['10.0.0.1', 'inside.attacker.test']) {
      const res = await call('read_file', { path });
      assert.equal(res.isError, true, path);
      assert.equal(res.structuredContent?.error?.code, 'egress_blocked', path);
      assert.equal(reached('read_file', path), 0, path);
    }
  });

  test("a custom scheme's identifier reaches the tool; the same scheme naming an inside host is blocked", async () => {
    const res = await call('open_note', { noteUri: 'note://daily/2026-12-05' });
    assert.notEqual(res.isError, true, JSON.stringify(res));
    assert.equal(reached('open_note', 'note://daily/2026-12-05'), 1);
    for (const noteUri of ['note://db.inside.test/x', 'note://127.0.0.1/x']) {
      const blocked = await call('open_note', { noteUri });
      assert.equal(blocked.structuredContent?.error?.code, 'egress_blocked', noteUri);
      assert.equal(reached('open_note', noteUri), 0, noteUri);
    }
  });

  test('what is plainly a destination is still blocked when it does not resolve: a URL of a fetched scheme, a destination field, a known network scheme', async () => {
    for (const [tool, args] of [
      ['fetch', { url: 'http://report.txt/' }],
      ['fetch', { url: 'nowhere.invalid' }],
      ['read_file', { path: 'see https://nowhere.invalid/page' }],
      ['open_note', { noteUri: 'redis://cache.nowhere.invalid:6379/0' }],
    ] as const) {
      const res = await call(tool, args);
      assert.equal(res.structuredContent?.error?.code, 'egress_blocked', JSON.stringify(args));
      assert.match(res.content[0]!.text, /could not be resolved/);
    }
  });

  test('a completion value being typed (`https://docs.par`) is completed; a typed inside address is blocked', async () => {
    const typed = await client.complete({ ref: { type: 'ref/prompt', name: 'summarize' }, argument: { name: 'page', value: 'https://docs.par' } });
    assert.deepEqual(typed.completion.values, ['https://docs.par/index.html']);
    await assert.rejects(client.complete({ ref: { type: 'ref/prompt', name: 'summarize' }, argument: { name: 'page', value: 'http://10.0.0.1' } }), (err: { code?: number; data?: { code?: string } }) => err.code === -32602 && err.data?.code === 'egress_blocked');
  });
});
