// An HTTP+SSE (2024-11-05) upstream behind Gatehouse (issue 16 items 1 and 3): the real server-everything
// in SSE mode, reached by every kind of client: a legacy Streamable HTTP client (v1 SDK), a modern one (v2
// SDK, bridged: the server's elicitation becomes an InputRequiredResult), and an old SSE client (v1 SDK's
// SSEClientTransport, through listen.ssePath). Each lists and calls tools, reads a prompt and a resource,
// answers an elicitation and sees progress. The SSE upstream is also a member of a catalog.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startEverythingSse, type EverythingHttp } from '../fixtures/upstreams/everything-http.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { assertElicitationRoundTrip, assertProgressRelayedOneByOne, connectV1, textOf } from '../helpers/v1-everything.js';

let ev: EverythingHttp;
let gw: TestGateway;
before(async () => {
  ev = await startEverythingSse();
  gw = await startGateway({ upstreams: [{ name: 'everything', url: ev.url, transport: 'sse' }], listen: { ssePath: '/sse' } });
});
after(async () => {
  await gw.close();
  await ev.close();
});

/** Tools, a prompt and a resource, the same whatever the client. */
async function assertSurface(client: { listTools(): Promise<{ tools: Array<{ name: string }> }>; callTool(p: { name: string; arguments: Record<string, unknown> }): Promise<unknown>; getPrompt(p: { name: string; arguments?: Record<string, string> }): Promise<{ messages: unknown[] }>; readResource(p: { uri: string }): Promise<{ contents: Array<{ text?: unknown }> }> }): Promise<void> {
  const { tools } = await client.listTools();
  assert.ok(tools.some((t) => t.name === 'echo'), `tools: ${tools.map((t) => t.name).join(', ')}`);
  assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { message: 'through SSE' } })), 'Echo: through SSE');
  const prompt = await client.getPrompt({ name: 'simple-prompt' });
  assert.ok(prompt.messages.length > 0);
  const resource = await client.readResource({ uri: 'demo://resource/dynamic/text/1' });
  assert.match(String(resource.contents[0]?.text), /1/);
}

describe('an SSE upstream', () => {
  test('a legacy Streamable HTTP client (v1 SDK): tools, prompt, resource, progress one by one, elicitation', async () => {
    const { client } = await connectV1(gw.url, { name: 'sse-upstream-v1', timeoutMs: 20_000 });
    try {
      await assertSurface(client as never);
      await assertProgressRelayedOneByOne(client);
    } finally {
      await client.close();
    }
    await assertElicitationRoundTrip((opts) => connectV1(gw.url, { name: 'sse-upstream-v1-elicit', timeoutMs: 20_000, ...opts }), { name: 'Ada', check: true });
  });

  test('a modern client (v2 SDK, 2026-07-28): bridged; the server\'s elicitation arrives as input_required and its answer reaches the tool', async () => {
    const seen: string[] = [];
    const client = new V2Client({ name: 'sse-upstream-v2', version: '1' }, { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } });
    client.setRequestHandler('elicitation/create', async (req) => {
      seen.push((req.params as { message: string }).message);
      return { action: 'accept', content: { name: 'Grace', check: true } };
    });
    await client.connect(new V2Transport(new URL(gw.url)));
    try {
      assert.equal(client.getProtocolEra(), 'modern');
      await assertSurface(client as never);
      const progress: number[] = [];
      const result = await client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 2 } }, { timeout: 30_000, onprogress: (p: { progress: number }) => progress.push(p.progress) });
      assert.match(textOf(result), /Long running operation completed/);
      assert.equal(progress.length, 2);
      const elicited = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} }, { timeout: 30_000 });
      assert.equal(seen.length, 1);
      assert.match(textOf(elicited), /Grace/);
    } finally {
      await client.close();
    }
  });

  test('an old SSE client through listen.ssePath reaches the SSE upstream: HTTP+SSE on both sides', async () => {
    const client = new V1Client({ name: 'sse-both-sides', version: '1' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Alan', check: true } }));
    await client.connect(new SSEClientTransport(new URL(`${gw.origin}/sse`)));
    try {
      await assertSurface(client as never);
      assert.match(textOf(await client.callTool({ name: 'trigger-elicitation-request', arguments: {} }, undefined, { timeout: 30_000 })), /Alan/);
    } finally {
      await client.close();
    }
  });
});

describe('transport: auto (the default) finds HTTP+SSE as the spec says', () => {
  test('the POST of initialize fails with 404, so a GET that names its endpoint makes it an SSE upstream', async () => {
    const detecting = await startGateway({ upstreams: [{ name: 'everything', url: ev.url }] });
    try {
      const { client } = await connectV1(detecting.url, { name: 'sse-detected', timeoutMs: 20_000 });
      try {
        assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { message: 'found' } })), 'Echo: found');
      } finally {
        await client.close();
      }
      assert.ok(detecting.logs.some((l) => l.msg === 'upstream transport detected' && l.transport === 'sse'));
    } finally {
      await detecting.close();
    }
  });

  test('a server that is neither keeps its clear 502; streamableHttp pinned never tries the GET', async () => {
    const { startFakeUpstream } = await import('../fixtures/upstreams/fake-upstream.js');
    const gets: string[] = [];
    const fake = await startFakeUpstream((req, res) => {
      if (req.method === 'GET') gets.push(req.url ?? '');
      res.writeHead(404, { 'content-type': 'text/plain' }).end('nothing here');
    }, { handshake: false });
    for (const transport of ['auto', 'streamableHttp'] as const) {
      const g = await startGateway({ upstreams: [{ name: 'nothing', url: fake.url, transport }] });
      try {
        const { post, rpc, LEGACY_HEADERS } = await import('../helpers/http.js');
        const r = await post(g.url, rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } }), LEGACY_HEADERS);
        assert.equal(r.status, 502);
        assert.match(r.json().error.message, /answered neither server\/discover nor initialize \(HTTP 404\)/);
      } finally {
        await g.close();
      }
      // auto asked with one GET; streamableHttp adds none.
      assert.equal(gets.length, 1, `after ${transport}: ${gets.length} GETs`);
    }
    await fake.close();
  });
});

describe('an SSE upstream in a catalog', () => {
  let other: CountingUpstream;
  let catalog: TestGateway;
  before(async () => {
    other = await startCountingUpstream('modern');
    catalog = await startGateway({ upstreams: [{ name: 'everything', url: ev.url, transport: 'sse' }, { name: 'crm', url: other.url }] });
  });
  after(async () => {
    await catalog.close();
    await other.close();
  });

  test('its tools are listed beside the other member\'s, prefixed, and calls are routed to it', async () => {
    const { client } = await connectV1(catalog.url, { name: 'sse-catalog', timeoutMs: 20_000 });
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes('everything_echo') && names.includes('crm_record'), names.join(', '));
      assert.equal(textOf(await client.callTool({ name: 'everything_echo', arguments: { message: 'member' } })), 'Echo: member');
      assert.match(textOf(await client.callTool({ name: 'crm_record', arguments: { item: 'x' } })), /recorded x/);
    } finally {
      await client.close();
    }
  });
});

// A tool's own limit (timeouts.tools; cancellation.mdx §Timeouts: timeouts configurable per request) holds
// for an SSE upstream too, whose answers come on its event stream: the long-running tool is given 300 ms,
// echo keeps the upstream's limit.
describe('an SSE upstream with a limit of its own for one tool', () => {
  let limited: TestGateway;
  before(async () => {
    limited = await startGateway({ upstreams: [{ name: 'everything', url: ev.url, transport: 'sse', timeouts: { tools: { 'trigger-long-*': 300 } } }] });
  });
  after(async () => {
    await limited.close();
  });

  test('a call to that tool is cut at its limit; another tool answers', async () => {
    const { client } = await connectV1(limited.url, { name: 'sse-tool-limit', timeoutMs: 20_000 });
    try {
      // Causal, not timed: the tool runs 60 s, past the client's own 20 s limit, so only the 300 ms cut can
      // end the call with this error.
      await assert.rejects(client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 60, steps: 2 } }), (err: Error) => /did not answer within 300 ms/.test(err.message));
      assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { message: 'unlimited' } })), 'Echo: unlimited');
    } finally {
      await client.close();
    }
  });
});
