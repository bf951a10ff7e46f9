// What `timeouts.requestMs` of a stdio upstream does not cut short (2025-11-25/basic/lifecycle.mdx
// §Timeouts: a request that gets no answer in time is cancelled; GATEWAY-REQUIREMENTS §9, §16.1): a
// subscriptions/listen, which is answered only when it ends, and a call waiting on its client's input (an
// elicitation the user takes a while to answer), which waits on the client, not on the server. Both with a
// requestMs far below the waits. Real servers: the v2 SDK's modern stdio fixture and
// server-everything over stdio; real clients: the v2 SDK pinned to 2026-07-28, and plain HTTP.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { connectClient, textOf } from '../helpers/matrix-clients.js';
import { readSseUntil } from '../helpers/sse.js';
import { startPollingServer } from '../fixtures/upstreams/polling-server.js';

const MODERN_STDIO = fileURLToPath(new URL('../fixtures/upstreams/modern-stdio-server.mjs', import.meta.url));
const EVERYTHING = fileURLToPath(new URL('../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url));
const REQUEST_MS = 600;

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

test('a modern listen on a modern stdio server stays open past timeouts.requestMs', async () => {
  const gw = await startGateway({ upstreams: [{ name: 'm', command: [process.execPath, MODERN_STDIO], timeouts: { requestMs: REQUEST_MS } }] });
  cleanups.push(() => gw.close());
  // The child takes a while to start on a busy machine, longer than this short requestMs: the first requests
  // may time out until it is up. Once a list answers, it is.
  const list = modernRequest(0, 'tools/list');
  for (let i = 0; i < 20 && (await post(gw.url, list.body, list.headers)).status !== 200; i++) await new Promise((r) => setTimeout(r, 250));
  const listen = modernRequest(1, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
  const ac = new AbortController();
  const res = await request(gw.url, { method: 'POST', headers: listen.headers, body: listen.body, signal: ac.signal });
  cleanups.push(async () => ac.abort());
  assert.equal(res.statusCode, 200);
  const ack = await readSseUntil(res.body, (m) => m.length >= 1, 5_000);
  assert.equal(ack[0]?.method, 'notifications/subscriptions/acknowledged', JSON.stringify(ack));
  // Three request timeouts later: nothing came, above all no error ending the listen.
  const later = await readSseUntil(res.body, (m) => m.length >= 1, REQUEST_MS * 3);
  // Timed like a call, it would have ended by now with GW_ERR_UPSTREAM_TIMEOUT (an error message here).
  assert.deepEqual(later, [], 'the listen is still open and quiet');
});

test('a call parked on an elicitation the user answers after timeouts.requestMs still completes (legacy stdio server, modern client)', async () => {
  // server-everything takes about a second to start: its requests get a little more than that, and the
  // first list waits until it is up.
  const requestMs = 1_500;
  const gw = await startGateway({ upstreams: [{ name: 'everything', command: [process.execPath, EVERYTHING, 'stdio'], timeouts: { requestMs } }] });
  cleanups.push(() => gw.close());
  const list = modernRequest(0, 'tools/list');
  for (let i = 0; i < 20 && (await post(gw.url, list.body, list.headers)).status !== 200; i++) await new Promise((r) => setTimeout(r, 250));
  const client = await connectClient('v2-pinned-client', gw.url, { elicitAnswer: { action: 'accept', content: { name: 'Ada slow', check: true } }, elicitDelayMs: requestMs * 2.5, timeoutMs: 20_000 });
  cleanups.push(() => client.close());
  const result = await client.callTool('trigger-elicitation-request', {});
  assert.notEqual(result.isError, true, textOf(result));
  assert.match(textOf(result), /- Name: Ada slow/);
  assert.equal(client.elicitations.length, 1);
});

test('a quiet listen gets keep-alive comments: on a stdio server, through the catalog, and bridged to a legacy server (streamable-http.mdx §Receiving Messages: keep-alives)', async () => {
  const direct = await startGateway({ upstreams: [{ name: 'm', command: [process.execPath, MODERN_STDIO] }] });
  cleanups.push(() => direct.close());
  // `prefix: always` serves even one upstream through the catalog.
  const catalog = await startGateway({ upstreams: [{ name: 'm', command: [process.execPath, MODERN_STDIO] }], tools: { naming: { prefix: 'always' } } });
  cleanups.push(() => catalog.close());
  const heard = async (url: string): Promise<string> => {
    const listen = modernRequest(1, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
    const ac = new AbortController();
    cleanups.push(async () => ac.abort());
    const res = await request(url, { method: 'POST', headers: listen.headers, body: listen.body, signal: ac.signal });
    let text = '';
    const deadline = Date.now() + 20_000;
    const it = res.body[Symbol.asyncIterator]();
    while (Date.now() < deadline && !text.includes(': keep-alive')) {
      const next = await Promise.race([it.next(), new Promise<{ done: true; value: undefined }>((r) => setTimeout(() => r({ done: true, value: undefined }), Math.max(1, deadline - Date.now())))]);
      if (next.done) break;
      text += String(next.value);
    }
    ac.abort();
    return text;
  };
  // And a modern client's listen bridged to a legacy HTTP server (the v1 SDK's).
  const legacy = await startPollingServer();
  cleanups.push(() => legacy.close());
  const bridged = await startGateway({ upstreams: [{ name: 'l', url: legacy.url, era: 'legacy' }] });
  cleanups.push(() => bridged.close());
  const [one, two, three] = await Promise.all([heard(direct.url), heard(catalog.url), heard(bridged.url)]);
  assert.match(one, /: keep-alive/, `stdio listen: ${one}`);
  assert.match(two, /: keep-alive/, `catalog listen: ${two}`);
  assert.match(three, /: keep-alive/, `bridged listen: ${three}`);
});
