// Several upstreams behind one endpoint (the catalog): server-everything and server-memory over stdio and a
// modern HTTP fixture whose tool names are built to collide or to be unsafe. Names must come out safe,
// unique, sorted, stable across restarts in a different order, carry their refs, and route back.
// Spec: 2026-07-28/server/tools.mdx §Tool Names (proxies SHOULD disambiguate), §Error Handling (-32602).

import { after, describe, test } from 'node:test';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { request } from 'undici';
import { startChangingHeaderUpstream } from '../fixtures/upstreams/changing-header.js';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { readSseUntil } from '../helpers/sse.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, modernRequest, post, rpc } from '../helpers/http.js';

const LONG = 'x'.repeat(100);
const FIXTURE_TOOLS = ['echo', 'read_graph', 'get.user', 'get_user', 'name with space', 'ünïcode', LONG, 'a/b'];

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function fixture(): Promise<FakeUpstream> {
  const up = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id: unknown; method: string; params: { name?: string; arguments?: unknown } };
    const result =
      msg.method === 'tools/list'
        ? {
            tools: [
              ...FIXTURE_TOOLS.map((name) => ({ name, description: `fixture ${name}`, inputSchema: { type: 'object' } })),
              { name: 'typed', inputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } },
              { name: 'bad-header', inputSchema: { type: 'object', properties: { v: { type: 'number', 'x-mcp-header': 'V' } } } },
            ],
            resultType: 'complete',
            ttlMs: 0,
            cacheScope: 'public',
          }
        : { content: [{ type: 'text', text: `fixture called ${msg.params.name}` }], resultType: 'complete' };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
  }, { handshake: 'modern' });
  cleanups.push(() => up.close());
  return up;
}

const EVERYTHING = { name: 'everything', command: [process.execPath, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'] };
const MEMORY = { name: 'memory', command: [process.execPath, 'node_modules/@modelcontextprotocol/server-memory/dist/index.js'], env: { MEMORY_FILE_PATH: join(mkdtempSync(join(tmpdir(), 'gatehouse-memory-')), 'memory.jsonl') } };

async function catalogGateway(order: 'forward' | 'reverse', up: FakeUpstream): Promise<TestGateway> {
  const upstreams = [EVERYTHING, MEMORY, { name: 'fixture', url: up.url }];
  const gw = await startGateway({ upstreams: order === 'forward' ? upstreams : [...upstreams].reverse() });
  cleanups.push(() => gw.close());
  return gw;
}

type Tool = { name: string; description?: string; _meta?: Record<string, unknown> };

async function listTools(gw: TestGateway): Promise<Tool[]> {
  const req = modernRequest(1, 'tools/list', { _meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } } });
  const res = await post(gw.url, req.body, req.headers);
  assert.equal(res.status, 200, res.text);
  return res.json().result.tools as Tool[];
}

describe('catalog of three upstreams', () => {
  test('names are safe, unique, sorted, carry their refs, and are stable across restarts in another order', async () => {
    const up = await fixture();
    const first = await listTools(await catalogGateway('forward', up));
    const second = await listTools(await catalogGateway('reverse', up));
    const names = first.map((t) => t.name);
    for (const n of names) assert.match(n, /^[A-Za-z0-9_-]{1,64}$/, n);
    assert.equal(new Set(names).size, names.length, 'unique');
    assert.deepEqual([...names].sort(), names, 'sorted');
    const refOf = (tools: Tool[]) => Object.fromEntries(tools.map((t) => [t.name, t._meta?.['dev.gatehouse/tool_ref']]));
    assert.deepEqual(refOf(second), refOf(first), 'the same names for the same refs after a restart in reverse order');
    const refs = Object.values(refOf(first));
    for (const name of FIXTURE_TOOLS) assert.ok(refs.includes(`fixture/${name}`), `fixture/${name} listed`);
    assert.ok(refs.includes('everything/echo') && refs.includes('memory/read_graph'));
    assert.equal(refOf(first).everything_echo, 'everything/echo');
    assert.equal(refOf(first).fixture_echo, 'fixture/echo');
    assert.equal(first.find((t) => t._meta?.['dev.gatehouse/tool_ref'] === 'fixture/get.user')?.description, 'fixture get.user', 'descriptions untouched');
    assert.ok(names.some((n) => n.length === 64 && n.startsWith('fixture_xxx')), 'the 100-character name is cut to 64 with a digest');
  });

  test('public names route back to the right upstream with the original name; an unknown one is -32602', async () => {
    const up = await fixture();
    const gw = await catalogGateway('forward', up);
    const tools = await listTools(gw);
    const byRef = (ref: string) => tools.find((t) => t._meta?.['dev.gatehouse/tool_ref'] === ref)!.name;
    const call = async (name: string, args: Record<string, unknown> = {}) => {
      const req = modernRequest(2, 'tools/call', { name, arguments: args });
      return (await post(gw.url, req.body, req.headers)).json();
    };
    assert.equal((await call(byRef('fixture/get.user'))).result.content[0].text, 'fixture called get.user');
    assert.equal((await call(byRef('fixture/a/b'))).result.content[0].text, 'fixture called a/b');
    assert.equal(up.requests.at(-1)!.headers['mcp-name'], 'a/b', 'the upstream gets its own name in Mcp-Name too');
    assert.match(JSON.stringify((await call(byRef('everything/echo'), { message: 'through the catalog' })).result.content), /through the catalog/);
    assert.ok(Array.isArray(JSON.parse((await call(byRef('memory/read_graph'))).result.content[0].text).entities));
    const unknown = await call('no_such_tool');
    assert.equal(unknown.error.code, -32602);
    // Schema checks before anything is forwarded: a violation is a result the model can act on.
    const calls = up.requests.length;
    const invalid = await call(byRef('fixture/typed'), { n: 'seven' });
    assert.equal(invalid.result.isError, true);
    assert.equal(invalid.result.structuredContent.error.code, 'invalid_arguments');
    assert.equal(up.requests.length, calls, 'nothing was forwarded');
    assert.equal((await call(byRef('fixture/typed'), { n: 7 })).result.content[0].text, 'fixture called typed');
    // A tool whose x-mcp-header annotation is invalid is left out of the catalog.
    assert.ok(!tools.some((t) => t._meta?.['dev.gatehouse/tool_ref'] === 'fixture/bad-header'));
    assert.ok(gw.logs.some((l) => l.msg === 'tool left out of the catalog: invalid x-mcp-header annotation' && l.tool === 'bad-header'));
  });

  test('a legacy client (v1 SDK) sees the same catalog through a session Gatehouse holds', async () => {
    const up = await fixture();
    const gw = await catalogGateway('forward', up);
    const client = new Client({ name: 'legacy-catalog-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
    try {
      const { tools } = await client.listTools();
      assert.ok(tools.some((t) => t.name === 'memory_read_graph'));
      const result = await client.callTool({ name: 'everything_echo', arguments: { message: 'legacy via catalog' } });
      assert.match(JSON.stringify(result.content), /legacy via catalog/);
      assert.deepEqual(client.getServerCapabilities()?.tools !== undefined, true, 'initialize advertised the union of capabilities');
    } finally {
      await client.close();
    }
  });
});

describe('catalog lists and output checks', () => {
  async function bigFixture(): Promise<FakeUpstream> {
    const up = await startFakeUpstream((_req, res, body) => {
      const msg = JSON.parse(body) as { id: unknown; method: string; params: { name?: string } };
      const tools = Array.from({ length: 250 }, (_, i) => ({ name: `t${String(i).padStart(3, '0')}`, inputSchema: { type: 'object' } }));
      tools.push({ name: 'drifty', inputSchema: { type: 'object' }, outputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } } as (typeof tools)[number]);
      const result =
        msg.method === 'tools/list'
          ? { tools, resultType: 'complete', ttlMs: 0, cacheScope: 'public' }
          : { content: [{ type: 'text', text: '{"n":"not a number"}' }], structuredContent: { n: 'not a number' }, resultType: 'complete' };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
    }, { handshake: 'modern' });
    cleanups.push(() => up.close());
    return up;
  }

  async function gatewayWith(outputValidation: 'warn' | 'enforce'): Promise<TestGateway> {
    const up = await bigFixture();
    const other = await fixture();
    const gw = await startGateway({ upstreams: [{ name: 'big', url: up.url }, { name: 'fixture', url: other.url }], tools: { outputValidation } });
    cleanups.push(() => gw.close());
    return gw;
  }

  test('merged lists are paginated with an opaque cursor across upstreams (basic/utilities/pagination)', async () => {
    const gw = await gatewayWith('warn');
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let pageNo = 0; pageNo < 10; pageNo++) {
      const req = modernRequest(pageNo, 'tools/list', cursor !== undefined ? { cursor } : {});
      const result = (await post(gw.url, req.body, req.headers)).json().result;
      seen.push(...(result.tools as Tool[]).map((t) => t.name));
      cursor = result.nextCursor;
      if (cursor === undefined) break;
    }
    assert.equal(seen.length, 251 + FIXTURE_TOOLS.length + 1, 'every tool of both upstreams, once');
    assert.equal(new Set(seen).size, seen.length);
    const bad = modernRequest(99, 'tools/list', { cursor: 'not-our-cursor' });
    assert.equal((await post(gw.url, bad.body, bad.headers)).json().error.code, -32602);
  });

  test('structuredContent that breaks the outputSchema: warn passes it on and logs; enforce turns it into invalid_output', async () => {
    for (const mode of ['warn', 'enforce'] as const) {
      const gw = await gatewayWith(mode);
      const req = modernRequest(1, 'tools/call', { name: 'big_drifty', arguments: {} });
      const result = (await post(gw.url, req.body, req.headers)).json().result;
      assert.ok(gw.logs.some((l) => l.msg === 'tool output does not match its outputSchema'), mode);
      if (mode === 'warn') assert.deepEqual(result.structuredContent, { n: 'not a number' });
      else {
        assert.equal(result.isError, true);
        // tools.mdx §Output Schema: a tool with an outputSchema gets no structuredContent its schema does not
        // allow; the refusal's code is in _meta (refusal-output-schema.test.ts).
        assert.equal(result.structuredContent, undefined);
        assert.equal(result._meta['dev.gatehouse/error'].code, 'invalid_output');
      }
    }
  });
});

describe('catalog caching and change notifications', () => {
  /** A modern upstream with cacheable lists (ttlMs) and a listen stream the test can push into. */
  async function listeningFixture(name: string, ttlMs = 60_000, announcesChanges = false) {
    const listens: Array<import('node:http').ServerResponse> = [];
    let lists = 0;
    const up = await startFakeUpstream((_req, res, body) => {
      const msg = JSON.parse(body) as { id: unknown; method: string; params: { notifications?: Record<string, unknown> } };
      if (msg.method === 'server/discover') {
        const result = { supportedVersions: ['2026-07-28'], capabilities: { tools: { listChanged: true } }, resultType: 'complete', ttlMs: 0, cacheScope: 'public' };
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
      }
      if (msg.method === 'initialize') {
        // Modern only: the legacy handshake is refused (not dual-era).
        return void res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2026-07-28'] } } }));
      }
      if (msg.method === 'subscriptions/listen') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': msg.id }, notifications: { toolsListChanged: true } } })}\n\n`);
        listens.push(res);
        return;
      }
      if (msg.method === 'tools/list') lists++;
      const result = msg.method === 'tools/list' ? { tools: [{ name: `${name}-tool`, inputSchema: { type: 'object' } }], resultType: 'complete', ttlMs, cacheScope: 'public' } : { content: [], resultType: 'complete' };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
    }, { handshake: announcesChanges ? false : 'modern' });
    cleanups.push(() => up.close());
    return { up, listens, lists: () => lists };
  }

  /**
   * A modern member, behind a second one (so the catalog serves), whose tools/list comes in two pages;
   * the second fails (a cursor gone stale) while `secondPageFails` says so.
   */
  async function pagedMember(name: string, secondPageFails: () => boolean) {
    let firstPages = 0;
    const up = await startFakeUpstream((_req, res, body) => {
      const msg = JSON.parse(body) as { id: unknown; method: string; params: { cursor?: string } };
      const reply = (payload: Record<string, unknown>): void => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, ...payload }));
      if (msg.method !== 'tools/list') return reply({ result: { resultType: 'complete' } });
      if (msg.params.cursor === undefined) {
        firstPages++;
        return reply({ result: { tools: [{ name: 'first', inputSchema: { type: 'object' } }], nextCursor: 'page-2', resultType: 'complete', ttlMs: 60_000, cacheScope: 'public' } });
      }
      if (secondPageFails()) return reply({ error: { code: -32602, message: 'Invalid cursor' } });
      return reply({ result: { tools: [{ name: 'second', inputSchema: { type: 'object' } }], resultType: 'complete', ttlMs: 60_000, cacheScope: 'public' } });
    }, { handshake: 'modern' });
    const other = await listeningFixture(`${name}-other`);
    cleanups.push(() => up.close());
    const gw = await startGateway({ upstreams: [{ name, url: up.url }, { name: 'other', url: other.up.url }] });
    cleanups.push(() => gw.close());
    const list = async (): Promise<string[]> => {
      const req = modernRequest(1, 'tools/list');
      return ((await post(gw.url, req.body, req.headers)).json().result.tools as Tool[]).map((t) => t.name).filter((n) => n.startsWith(`${name}_`));
    };
    return { list, firstPages: () => firstPages };
  }

  test('a later page that fails is not kept: the list is read again from its start (caching.mdx §Interaction with Pagination)', async () => {
    // The first reading's second page fails once: the list is read again from page one, and is whole.
    let failures = 1;
    const member = await pagedMember('paged', () => failures-- > 0);
    assert.deepEqual(await member.list(), ['paged_first', 'paged_second']);
    const read = member.firstPages();
    assert.ok(read >= 2, `read from its start again (${read} first pages)`);
    assert.deepEqual(await member.list(), ['paged_first', 'paged_second']);
    assert.equal(member.firstPages(), read, 'the whole list was kept for its ttlMs');
  });

  test('a call refused with -32020 after the tool\'s x-mcp-header changed is sent again once, with the headers of a fresh list (streamable-http.mdx §Client Behavior)', async () => {
    const { up: changing, setHeader, calls, lists } = await startChangingHeaderUpstream();
    const other = await listeningFixture('other3');
    cleanups.push(() => changing.close());
    const gw = await startGateway({ upstreams: [{ name: 'changing', url: changing.url }, { name: 'other', url: other.up.url }] });
    cleanups.push(() => gw.close());
    const callGeo = async () => {
      const req = modernRequest(1, 'tools/call', { name: 'changing_geo', arguments: { place: 'eu' } });
      // The client mirrors the value as Gatehouse's list told it (x-mcp-header: Region).
      return post(gw.url, req.body, { ...req.headers, 'mcp-param-region': 'eu' });
    };
    { const first = await callGeo(); assert.equal(first.status, 200, `${first.text} calls=${JSON.stringify(calls)}`); }
    // The upstream now wants the value in another header; Gatehouse's list (kept 60 s) still names the old one.
    setHeader('Zone');
    const listsBefore = lists();
    const res = await callGeo();
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json().result.content[0].text, 'at eu');
    assert.equal(lists(), listsBefore + 1, 'listed again once');
    assert.deepEqual(calls, ['eu', undefined, 'eu'], 'refused once with the old header, then sent with the new one');
  });

  test('a list whose later page keeps failing is answered in part, and never kept', async () => {
    const member = await pagedMember('broken', () => true);
    assert.deepEqual(await member.list(), ['broken_first']);
    const read = member.firstPages();
    await member.list();
    assert.ok(member.firstPages() > read, 'not served from a cache: read again');
  });

  test('when one upstream ends its listen, the client\'s listen ends with its result, so that it listens again (subscriptions.mdx §Graceful Closure)', async () => {
    const one = await listeningFixture('one');
    const two = await listeningFixture('two');
    const gw = await startGateway({ upstreams: [{ name: 'one', url: one.up.url }, { name: 'two', url: two.up.url }] });
    cleanups.push(() => gw.close());
    const listen = modernRequest(9, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
    const ac = new AbortController();
    cleanups.push(async () => ac.abort());
    const res = await request(gw.url, { method: 'POST', headers: listen.headers, body: listen.body, signal: ac.signal });
    const acked = await readSseUntil(res.body, (m) => m.length >= 1);
    assert.equal(acked[0]?.method, 'notifications/subscriptions/acknowledged');
    for (let i = 0; i < 50 && (one.listens.length === 0 || two.listens.length === 0); i++) await new Promise((r) => setTimeout(r, 20));
    // Upstream one ends its listen, as a server does (its result, naming the listen).
    const theirs = one.listens[0]!;
    theirs.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: 'x', result: { resultType: 'complete' } })}\n\n`);
    const rest = await readSseUntil(res.body, (m) => m.some((x) => x.id === 9), 5_000);
    assert.deepEqual(rest.find((m) => m.id === 9)?.result, { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': 9 } }, `the client's listen ended: ${JSON.stringify(rest)}`);
    for (let i = 0; i < 50 && !two.listens[0]!.destroyed; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(two.listens[0]!.destroyed, true, 'the other upstream\'s listen was closed with it');
  });

  test('a modern member that says ttlMs: 0 is read again for every list, though it announces its changes (caching.mdx §Time-to-Live)', async () => {
    const zero = await listeningFixture('zero', 0, true);
    const other = await listeningFixture('other');
    const gw = await startGateway({ upstreams: [{ name: 'zero', url: zero.up.url }, { name: 'other', url: other.up.url }] });
    cleanups.push(() => gw.close());
    const list = async () => {
      const req = modernRequest(1, 'tools/list');
      return ((await post(gw.url, req.body, req.headers)).json().result.tools as Tool[]).map((t) => t.name);
    };
    for (let i = 0; i < 3; i++) assert.deepEqual((await list()).sort(), ['other_other-tool', 'zero_zero-tool']);
    assert.ok(zero.lists() >= 3, `stale at once: read for each of the three lists (${zero.lists()} reads)`);
    assert.equal(other.lists(), 1, 'a ttlMs of a minute is kept');
  });

  test('lists are cached for their ttlMs; a listen relays list changes under the client id and drops the cache', async () => {
    const one = await listeningFixture('one');
    const two = await listeningFixture('two');
    const gw = await startGateway({ upstreams: [{ name: 'one', url: one.up.url }, { name: 'two', url: two.up.url }] });
    cleanups.push(() => gw.close());
    const list = async () => {
      const req = modernRequest(1, 'tools/list');
      return ((await post(gw.url, req.body, req.headers)).json().result.tools as Tool[]).map((t) => t.name);
    };
    assert.deepEqual(await list(), ['one_one-tool', 'two_two-tool']);
    await list();
    assert.equal(one.lists(), 1, 'the second list came from the cache (ttlMs 60000)');

    const listen = modernRequest(42, 'subscriptions/listen', { notifications: { toolsListChanged: true, promptsListChanged: true } });
    const ac = new AbortController();
    const res = await request(gw.url, { method: 'POST', headers: listen.headers, body: listen.body, signal: ac.signal });
    const reader = res.body[Symbol.asyncIterator]();
    let text = '';
    const readUntil = async (re: RegExp) => {
      for (let i = 0; i < 50 && !re.test(text); i++) {
        const next = await Promise.race([reader.next(), new Promise<{ done: true; value: undefined }>((r) => setTimeout(() => r({ done: true, value: undefined }), 200))]);
        if (!next.done) text += String(next.value);
      }
      return re.test(text);
    };
    assert.ok(await readUntil(/subscriptions\/acknowledged/));
    assert.match(text, /"notifications":\{"toolsListChanged":true\}/, 'the ack is the union of what the upstreams honour (no prompts)');
    for (let i = 0; i < 50 && one.listens.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    one.listens[0]!.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 'theirs' } } })}\n\n`);
    assert.ok(await readUntil(/tools\/list_changed/));
    assert.match(text, /"io\.modelcontextprotocol\/subscriptionId":42/);
    await list();
    assert.equal(one.lists(), 2, 'the change dropped the cached list');
    assert.equal(two.lists(), 1, 'the other upstream kept its cache');
    ac.abort();
  });
});

test('a resource URI no list showed is routed by the configured uriPrefixes; otherwise it is -32602', async () => {
  const reads: string[] = [];
  const up = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id: unknown; method: string; params: { uri?: string } };
    if (msg.method === 'resources/read') reads.push(msg.params.uri!);
    const result = msg.method === 'resources/read' ? { contents: [{ uri: msg.params.uri, text: 'hidden file' }], resultType: 'complete', ttlMs: 0, cacheScope: 'public' } : { resources: [], tools: [], resultType: 'complete', ttlMs: 0, cacheScope: 'public' };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
  }, { handshake: 'modern' });
  const other = await fixture();
  cleanups.push(() => up.close());
  const gw = await startGateway({ upstreams: [{ name: 'files', url: up.url, uriPrefixes: ['file:///data/'] }, { name: 'other', url: other.url }] });
  cleanups.push(() => gw.close());
  const read = modernRequest(1, 'resources/read', { uri: 'file:///data/secret.txt' });
  const res = (await post(gw.url, read.body, read.headers)).json();
  assert.equal(res.result.contents[0].text, 'hidden file');
  assert.deepEqual(reads, ['file:///data/secret.txt']);
  const elsewhere = modernRequest(2, 'resources/read', { uri: 'file:///etc/passwd' });
  assert.equal((await post(gw.url, elsewhere.body, elsewhere.headers)).json().error.code, -32602);
});

test('one upstream with tools.naming.prefix: always goes through the catalog: its unsafe names come out safe and prefixed', async () => {
  const up = await fixture();
  const gw = await startGateway({ upstreams: [{ name: 'solo', url: up.url }], tools: { naming: { prefix: 'always' } } });
  cleanups.push(() => gw.close());
  const tools = await listTools(gw);
  for (const t of tools) assert.match(t.name, /^solo_[A-Za-z0-9_-]{1,59}$/);
  const dotted = tools.find((t) => t._meta?.['dev.gatehouse/tool_ref'] === 'solo/get.user')!;
  const req = modernRequest(3, 'tools/call', { name: dotted.name, arguments: {} });
  assert.equal((await post(gw.url, req.body, req.headers)).json().result.content[0].text, 'fixture called get.user');
});

test('one upstream with the default prefix: auto still gets safe names (no prefix), and its calls round-trip', async () => {
  const up = await fixture();
  const gw = await startGateway({ upstreams: [{ name: 'solo', url: up.url }] });
  cleanups.push(() => gw.close());
  const tools = await listTools(gw);
  for (const t of tools) assert.match(t.name, /^[A-Za-z0-9_-]{1,64}$/, t.name);
  assert.ok(!tools.some((t) => t.name.startsWith('solo_')), 'one upstream: no prefix');
  assert.equal(new Set(tools.map((t) => t.name)).size, tools.length);
  const dotted = tools.find((t) => t._meta?.['dev.gatehouse/tool_ref'] === 'solo/get.user')!;
  assert.match(dotted.name, /^get_user/);
  const req = modernRequest(3, 'tools/call', { name: dotted.name, arguments: {} });
  assert.equal((await post(gw.url, req.body, req.headers)).json().result.content[0].text, 'fixture called get.user');
  // A legacy client of the same gateway sees the same safe names.
  const init = await post(gw.url, rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'l', version: '1' } }));
  const headers = { ...LEGACY_HEADERS, 'mcp-session-id': init.headers['mcp-session-id'] as string, 'mcp-protocol-version': '2025-11-25' };
  const legacy = await post(gw.url, rpc(2, 'tools/list'), headers);
  const legacyBody = legacy.text.startsWith('{') ? legacy.json() : JSON.parse(/data: (.*)/.exec(legacy.text)![1]!);
  assert.deepEqual((legacyBody.result.tools as Tool[]).map((t) => t.name), tools.map((t) => t.name));
});

test('one upstream whose names are all safe keeps the byte pass-through', async () => {
  const up = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id: unknown; method: string };
    const result = msg.method === 'tools/list' ? { tools: [{ name: 'plain_name', inputSchema: { type: 'object' } }], resultType: 'complete', ttlMs: 0, cacheScope: 'public' } : { resultType: 'complete' };
    // The exact bytes the upstream wrote, spacing included, are what a pass-through relays.
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }, null, 1));
  }, { handshake: 'modern' });
  cleanups.push(() => up.close());
  const gw = await startGateway({ upstreams: [{ name: 'solo', url: up.url }] });
  cleanups.push(() => gw.close());
  const req = modernRequest(1, 'tools/list');
  const res = await post(gw.url, req.body, req.headers);
  assert.equal(res.text, JSON.stringify({ jsonrpc: '2.0', id: 1, result: { tools: [{ name: 'plain_name', inputSchema: { type: 'object' } }], resultType: 'complete', ttlMs: 0, cacheScope: 'public' } }, null, 1));
});

test('a legacy member without ttlMs: its list is kept until its GET stream announces a change', async () => {
  const getStreams: Array<import('node:http').ServerResponse> = [];
  let lists = 0;
  const legacy = await startFakeUpstream((req, res, body) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': open\n\n');
      getStreams.push(res);
      return;
    }
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    const msg = JSON.parse(body) as { id?: unknown; method?: string };
    if (msg.method === 'server/discover') return void res.writeHead(400, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request"}}');
    if (msg.method === 'initialize') {
      const text = JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'legacy-list', version: '1' } } });
      return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': `s-${Math.random()}` }).end(text);
    }
    if (msg.id === undefined) return void res.writeHead(202).end();
    if (msg.method === 'tools/list') lists++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { tools: [{ name: 'old-tool', inputSchema: { type: 'object' } }] } }));
  }, { handshake: false });
  cleanups.push(() => legacy.close());
  const other = await fixture();
  const gw = await startGateway({ upstreams: [{ name: 'legacy', url: legacy.url }, { name: 'other', url: other.url }] });
  cleanups.push(() => gw.close());
  await listTools(gw);
  await listTools(gw);
  assert.equal(lists, 1, 'the second list came from the cache');
  for (let i = 0; i < 100 && getStreams.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
  for (const s of getStreams) s.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })}\n\n`);
  for (let i = 0; i < 100 && lists < 2; i++) {
    await listTools(gw);
    if (lists < 2) await new Promise((r) => setTimeout(r, 20));
  }
  assert.equal(lists, 2, 'the change made the catalog read the list again');
});

test('access rules on resources: hidden URIs are left out of lists, reads and subscriptions, and their updates are not relayed', async () => {
  const seenFilters: unknown[] = [];
  let listenStream: import('node:http').ServerResponse | undefined;
  const up = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id: unknown; method: string; params: { uri?: string; notifications?: { resourceSubscriptions?: string[] } } };
    if (msg.method === 'subscriptions/listen') {
      seenFilters.push(msg.params.notifications);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': msg.id }, notifications: msg.params.notifications } })}\n\n`);
      listenStream = res;
      return;
    }
    const resources = [{ uri: 'file:///public/a', name: 'a' }, { uri: 'file:///secret/b', name: 'b' }];
    const result = msg.method === 'resources/list' ? { resources, resultType: 'complete', ttlMs: 0 } : msg.method === 'resources/read' ? { contents: [{ uri: msg.params.uri, text: 'content' }], resultType: 'complete' } : { tools: [], resultType: 'complete', ttlMs: 0 };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
  }, { handshake: 'modern' });
  cleanups.push(() => up.close());
  const other = await fixture();
  const gw = await startGateway({ upstreams: [{ name: 'files', url: up.url }, { name: 'other', url: other.url }], policy: { rules: [{ access: 'allow', resources: ['file:///public/*'] }] } });
  cleanups.push(() => gw.close());
  const list = modernRequest(1, 'resources/list');
  assert.deepEqual((await post(gw.url, list.body, list.headers)).json().result.resources.map((r: { uri: string }) => r.uri), ['file:///public/a']);
  const hidden = modernRequest(2, 'resources/read', { uri: 'file:///secret/b' });
  const missing = modernRequest(3, 'resources/read', { uri: 'file:///nowhere/c' });
  const [h, m] = [(await post(gw.url, hidden.body, hidden.headers)).json(), (await post(gw.url, missing.body, missing.headers)).json()];
  assert.equal(h.error.code, -32602);
  assert.equal(h.error.message.replace('file:///secret/b', 'X'), m.error.message.replace('file:///nowhere/c', 'X'), 'a hidden resource reads exactly like a missing one');

  const listen = modernRequest(4, 'subscriptions/listen', { notifications: { resourceSubscriptions: ['file:///public/a', 'file:///secret/b'] } });
  const ac = new AbortController();
  cleanups.push(async () => ac.abort());
  const res = await request(gw.url, { method: 'POST', headers: listen.headers, body: listen.body, signal: ac.signal });
  const reader = res.body[Symbol.asyncIterator]();
  let text = '';
  const readUntil = async (re: RegExp): Promise<boolean> => {
    for (let i = 0; i < 30 && !re.test(text); i++) {
      const next = await Promise.race([reader.next(), new Promise<{ done: true; value: undefined }>((r) => setTimeout(() => r({ done: true, value: undefined }), 100))]);
      if (!next.done) text += String(next.value);
    }
    return re.test(text);
  };
  assert.ok(await readUntil(/subscriptions\/acknowledged/));
  assert.deepEqual(seenFilters.map((f) => (f as { resourceSubscriptions?: string[] }).resourceSubscriptions), [['file:///public/a']], 'the hidden URI was never subscribed upstream');
  for (const uri of ['file:///secret/b', 'file:///public/a']) listenStream!.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } })}\n\n`);
  assert.ok(await readUntil(/resources\/updated[^\n]*public\/a/));
  assert.doesNotMatch(text, /secret/, 'an update about a hidden resource is not relayed');
  ac.abort();
});
