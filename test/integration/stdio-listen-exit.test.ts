// A modern client's subscriptions/listen served from a legacy stdio child (GATEWAY-REQUIREMENTS §16.1): when
// the child dies, the session it held is gone, and the listen ends with its result rather than staying open
// and silent (2026-07-28/basic/transports/stdio.mdx §Unexpected Termination; subscriptions.mdx §Graceful
// Closure). The client's next listen gets a new session. The child is stdio-fake, whose `crash` tool exits.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { readSseUntil as readUntil } from '../helpers/sse.js';

const FAKE = fileURLToPath(new URL('../fixtures/upstreams/stdio-fake.mjs', import.meta.url));
const gw = await startGateway({ upstreams: [{ name: 'fake', command: [process.execPath, FAKE] }] });
after(() => gw.close());


test('the child dies: the listen ends with its result, and a new listen works', async () => {
  const listen = modernRequest(5, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
  const res = await request(gw.url, { method: 'POST', headers: listen.headers, body: listen.body });
  assert.equal(res.statusCode, 200);
  const ack = await readUntil(res.body, (m) => m.length >= 1, 5_000);
  assert.equal(ack[0]?.method, 'notifications/subscriptions/acknowledged', JSON.stringify(ack));
  // The same caller's call lands on the same child, and takes it down.
  const crash = modernRequest(6, 'tools/call', { name: 'crash', arguments: {} });
  const crashed = await post(gw.url, crash.body, crash.headers);
  assert.notEqual(crashed.status, 200, crashed.text);
  const rest = await readUntil(res.body, (m) => m.some((x) => x.id === 5), 5_000);
  const final = rest.find((m) => m.id === 5);
  assert.equal(final?.result?.resultType, 'complete', `the listen ended with its result: ${JSON.stringify(rest)}`);
  const again = modernRequest(7, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
  const res2 = await request(gw.url, { method: 'POST', headers: again.headers, body: again.body });
  const ack2 = await readUntil(res2.body, (m) => m.length >= 1, 5_000);
  assert.equal(ack2[0]?.method, 'notifications/subscriptions/acknowledged');
  res2.body.destroy();
});

test('a listen opened after the child died (the session still pooled) ends at once instead of hanging', async () => {
  // The caller's session is opened by a call, and its child then dies on the next one.
  const warm = modernRequest(11, 'tools/call', { name: 'echo', arguments: {} });
  assert.equal((await post(gw.url, warm.body, warm.headers)).status, 200);
  const crash = modernRequest(12, 'tools/call', { name: 'crash', arguments: {} });
  assert.notEqual((await post(gw.url, crash.body, crash.headers)).status, 200);
  const listen = modernRequest(13, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
  const res = await request(gw.url, { method: 'POST', headers: listen.headers, body: listen.body });
  // Ended before anything else was sent, the answer is plain JSON (its result alone); else an SSE stream.
  const messages = String(res.headers['content-type']).startsWith('application/json') ? [(await res.body.json()) as Record<string, any>] : await readUntil(res.body, (m) => m.some((x) => x.id === 13), 5_000);
  const final = messages.find((m) => m.id === 13);
  assert.equal(final?.result?.resultType, 'complete', `ended, not left open: ${JSON.stringify(messages)}`);
  const again = modernRequest(14, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
  const res2 = await request(gw.url, { method: 'POST', headers: again.headers, body: again.body });
  const ack = await readUntil(res2.body, (m) => m.length >= 1, 5_000);
  assert.equal(ack[0]?.method, 'notifications/subscriptions/acknowledged');
  res2.body.destroy();
});
