// An HTTP+SSE (2024-11-05) upstream that Gatehouse authenticates with an OAuth client-credentials token
// (upstreams[].clientCredentials; RFC 6749 §4.4), and that refuses that token before its announced expiry
// (revoked, or its server restarted with new keys): 401 on the event stream's GET and on the POSTs
// (RFC 6750 §3.1 invalid_token). Every other path to an HTTP upstream drops a refused token, so that the next
// call fetches a new one (upstream-credentials.test.ts). Until 4 December the HTTP+SSE channel did not: it
// sent the refused token again on every POST and every new stream until the token's own expiry (an hour, say),
// and every call to the upstream failed for that long.
//
// The upstream is the real v1 SDK (McpServer over SSEServerTransport) behind a bearer check; the client the
// real v1 SDK client.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { startGateway } from '../helpers/gateway.js';
import { connectV1, textOf } from '../helpers/v1-everything.js';
import { startV1SseServer } from '../helpers/v1-sse-server.js';

/** A client-credentials token endpoint handing out tok-1, tok-2, … for an hour each. */
async function tokenEndpoint(): Promise<{ url: string; issued: () => number; close(): Promise<void> }> {
  let issued = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify({ access_token: `tok-${++issued}`, token_type: 'Bearer', expires_in: 3600 }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`, issued: () => issued, close: () => closeServer(server) };
}

/** The v1 SDK's HTTP+SSE server, accepting only the tokens in `valid`; streams opened with a revoked one are ended. */
async function guardedSdkServer(valid: Set<string>): Promise<{ url: string; seen: string[]; revoke(token: string): void; close(): Promise<void> }> {
  const streams = new Map<ServerResponse, string>();
  const seen: string[] = [];
  const tokenOf = (req: IncomingMessage): string => (req.headers.authorization ?? '').replace(/^Bearer /, '');
  const server = await startV1SseServer(
    'guarded',
    (mcp) => mcp.tool('echo', { message: z.string() }, async ({ message }) => ({ content: [{ type: 'text', text: `echo: ${message}` }] })),
    {
      admit(req, res) {
        const token = tokenOf(req);
        seen.push(`${req.method} ${token}`);
        if (valid.has(token)) return true;
        res.writeHead(401, { 'www-authenticate': 'Bearer error="invalid_token"' }).end();
        return false;
      },
      opened(req, stream) {
        streams.set(stream, tokenOf(req));
        stream.on('close', () => streams.delete(stream));
      },
    },
  );
  return {
    url: server.url,
    seen,
    revoke(token) {
      valid.delete(token);
      for (const [res, t] of streams) if (t === token) res.end();
    },
    close: () => server.close(),
  };
}

function closeServer(server: Server): Promise<void> {
  return new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  });
}

test('a token the HTTP+SSE upstream refuses (401) is dropped: the next call goes with a new one', { timeout: 60_000 }, async () => {
  const tokens = await tokenEndpoint();
  const valid = new Set(['tok-1', 'tok-2', 'tok-3']);
  const up = await guardedSdkServer(valid);
  const gw = await startGateway({ upstreams: [{ name: 'g', url: up.url, transport: 'sse', era: 'legacy', clientCredentials: { tokenUrl: tokens.url, clientId: 'gatehouse', clientSecret: 's3cret' } }] });
  const { client } = await connectV1(gw.url, { name: 'sse-token', timeoutMs: 20_000 });
  const echo = (message: string) =>
    client.callTool({ name: 'echo', arguments: { message } }, undefined, { timeout: 10_000 }).then(
      (r) => textOf(r),
      (err: Error) => `error: ${err.message}`,
    );
  try {
    assert.equal(await echo('one'), 'echo: one');
    assert.equal(tokens.issued(), 1);
    // Revoked early: its stream ends, and the token is refused from now on.
    up.revoke('tok-1');
    // The call the refusal meets may fail (it is not replayed); within a few tries one goes with tok-2.
    let answered = '';
    for (let i = 0; i < 5 && answered !== 'echo: two'; i++) {
      answered = await echo('two');
      if (answered !== 'echo: two') await new Promise((r) => setTimeout(r, 300));
    }
    assert.equal(answered, 'echo: two', up.seen.join(', '));
    assert.equal(tokens.issued(), 2, 'one new token after the refusal');
    assert.ok(up.seen.some((s) => s.endsWith(' tok-2')), up.seen.join(', '));
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await up.close();
    await tokens.close();
  }
});
