// Step-up for one tool on the 2024-11-05 HTTP+SSE endpoint (listen.ssePath). On the MCP endpoint a call
// that a rule with `onMissingScopes: challenge` lets in only with more scopes is answered 403 with
// WWW-Authenticate error="insufficient_scope" and the scopes to ask for (2025-11-25/basic/authorization.mdx
// §Runtime Insufficient Scope Errors: 403 per RFC 6750 §3.1, `scope`, `resource_metadata`; the authorization
// spec covers every HTTP-based transport). The old transport answers each POSTed message 202 and writes the
// answer on the stream (2024-11-05/basic/transports.mdx §HTTP with SSE), so until 5 December the step-up
// was a JSON-RPC error on the stream, with no status and no challenge: no scope to ask for, nothing an
// OAuth client acts on. The POST is the HTTP response that can carry it: for a message the access stage
// may step up, Gatehouse now answers the POST only once that stage has passed it, and a step-up is the
// POST's 403 with the challenge, naming the SSE endpoint's own protected-resource metadata (as its 401
// does). The v1 SDK's SSE client rejects the call on that 403 ("Error POSTing to endpoint (HTTP 403)").
// Real v1 SDK SSE client, a real JWKS issuer (test/helpers/auth-server.ts), the v2 SDK's modern server.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { freePort, startAuthServer, type AuthServer } from '../helpers/auth-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startModernServer, type ModernServer } from '../fixtures/upstreams/modern-server.js';

let as: AuthServer;
let upstream: ModernServer;
let gw: TestGateway;
let origin: string;

before(async () => {
  as = await startAuthServer();
  upstream = await startModernServer();
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  gw = await startGateway({
    listen: { port, publicUrl: `${origin}/mcp`, ssePath: '/sse' },
    upstreams: [{ name: 'm', url: upstream.url, era: 'modern' }],
    auth: { failureLimit: { attempts: 0 }, oauth: { issuer: as.issuer, jwksUri: as.jwksUri, audience: `${origin}/mcp`, scopesSupported: ['mcp:tools', 'calc:write'] } },
    policy: {
      rules: [
        { id: 'calculators', scopes: ['calc:write'], onMissingScopes: 'challenge', access: 'allow', tools: ['m/add'] },
        { id: 'echoers', access: 'allow', tools: ['m/echo'] },
      ],
    },
  });
});

after(async () => {
  await gw?.close();
  await upstream?.close();
  await as?.close();
});

const tokenWith = (scope: string): Promise<string> => as.sign({ sub: 'alice', aud: `${origin}/mcp`, scope });
const upstreamCallsOf = (name: string): number =>
  upstream.requests.filter((r) => (r.body as { method?: string; params?: { name?: string } } | undefined)?.method === 'tools/call' && (r.body as { params: { name: string } }).params.name === name).length;

/** A v1 SDK SSE client with `token`, and the status and WWW-Authenticate of every POST it made. */
async function sseClient(token: string) {
  const posts: Array<{ status: number; challenge: string | null; body: string }> = [];
  const recording: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    if (init?.method === 'POST') {
      const body = res.status === 202 ? '' : await res.clone().text();
      posts.push({ status: res.status, challenge: res.headers.get('www-authenticate'), body });
    }
    return res;
  };
  const client = new V1Client({ name: 'sse-step-up', version: '1' });
  await client.connect(new SSEClientTransport(new URL(`${origin}/sse`), { requestInit: { headers: { authorization: `Bearer ${token}` } }, fetch: recording }), { timeout: 10_000 });
  return { client, posts };
}

describe('onMissingScopes: challenge on the HTTP+SSE endpoint', () => {
  test("a call without the scope: the POST is answered 403 insufficient_scope naming the scopes and the SSE endpoint's metadata", async () => {
    const { client, posts } = await sseClient(await tokenWith('mcp:tools'));
    try {
      const listed = (await client.listTools()).tools.map((t) => t.name).sort();
      assert.deepEqual(listed, ['add', 'echo'], 'add is listed: a client can step up for it');
      const before = upstreamCallsOf('add');
      await assert.rejects(client.callTool({ name: 'add', arguments: { a: 1, b: 2 } }, undefined, { timeout: 10_000 }), /HTTP 403/);
      const refused = posts.at(-1)!;
      assert.equal(refused.status, 403);
      assert.match(refused.challenge ?? '', /^Bearer /);
      assert.match(refused.challenge ?? '', /error="insufficient_scope"/);
      assert.match(refused.challenge ?? '', /scope="mcp:tools calc:write"/, 'the granted scope and the rule\'s');
      assert.ok(refused.challenge?.includes(`resource_metadata="${origin}/.well-known/oauth-protected-resource/sse"`), refused.challenge ?? '');
      const body = JSON.parse(refused.body) as { id: unknown; error: { code: number; message: string; data: { reason: string } } };
      assert.equal(body.error.data.reason, 'insufficient_scope');
      assert.match(body.error.message, /Insufficient scope: Tool "?add"? needs mcp:tools calc:write/);
      assert.equal(upstreamCallsOf('add'), before, 'nothing reached the upstream');
      // The connection stays usable, and a tool the caller may call is answered on the stream as before.
      const echoed = await client.callTool({ name: 'echo', arguments: { text: 'still here' } }, undefined, { timeout: 10_000 });
      assert.match(JSON.stringify(echoed.content), /still here/);
      assert.equal(posts.at(-1)!.status, 202);
    } finally {
      await client.close();
    }
  });

  test('with the scopes the call runs, its POST accepted 202 and its answer on the stream', async () => {
    const { client, posts } = await sseClient(await tokenWith('mcp:tools calc:write'));
    try {
      const before = upstreamCallsOf('add');
      const ran = await client.callTool({ name: 'add', arguments: { a: 1, b: 2 } }, undefined, { timeout: 10_000 });
      assert.deepEqual(ran.structuredContent, { sum: 3 });
      assert.equal(posts.at(-1)!.status, 202);
      assert.equal(upstreamCallsOf('add'), before + 1);
    } finally {
      await client.close();
    }
  });
});
