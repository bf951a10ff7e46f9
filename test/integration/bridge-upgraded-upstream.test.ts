// A modern client in front of a legacy upstream is served on a pooled legacy session (GATEWAY-REQUIREMENTS §16.1),
// and its subscriptions/listen from that session's GET stream. When the upstream is upgraded in place to a
// 2026-07-28 server, the bridge's legacy requests are refused with -32022 (2026-07-28/basic/versioning.mdx
// §Protocol Version Negotiation) and its GET with 405 (streamable-http.mdx §Earlier Streamable HTTP Revisions).
// Gatehouse kept its legacy verdict until the five-minute re-probe: every call failed meanwhile (-32603 naming
// upstreamCode -32022), though the server now spoke the client's own era; and a listen, whose GET was
// answered 405 when reopened, was taken for a server without GET streams: it stayed open, deaf, for good
// (it is never re-probed), while the new server's list changes went to nobody. upstream/README.md says a
// verdict is dropped at once when a bridge sees the upstream refuse its version.
// Now a -32022 (or a GET stream gone once it ran) drops the verdict and the session: the listen ends as a
// server ends one (subscriptions.mdx §Graceful Closure, with its result), so its client listens again, and the
// next call goes to the modern server as it is.
//
// Real parts: the legacy server is the v1 SDK (stateful), the modern one the v2 SDK fixture, behind one address
// (a relay in the test, switched at the "upgrade").

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { z } from 'zod';
import { startModernServer } from '../fixtures/upstreams/modern-server.js';
import { startV1HttpServer } from '../fixtures/upstreams/v1-http-server.js';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { startRedeployFront } from '../helpers/redeploy-front.js';
import { waitUntil } from '../helpers/stdio-children.js';

test('after a legacy upstream is upgraded to a 2026-07-28 server, a bridged listen ends and calls reach the new server at once', { timeout: 60_000 }, async () => {
  const legacy = await startV1HttpServer((server) => {
    server.registerTool('echo', { description: 'echo', inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text: `legacy: ${text}` }] }));
  });
  const modern = await startModernServer();
  // One address for the upstream, as an upgrade in place keeps it: relayed to the legacy server, then the modern one.
  const front = await startRedeployFront(legacy.url);
  const gw = await startGateway({ upstreams: [{ name: 'app', url: front.url }] });
  const ac = new AbortController();
  try {
    const call = async (id: number): Promise<Record<string, any>> => {
      const m = modernRequest(id, 'tools/call', { name: 'echo', arguments: { text: 'hi' } });
      return (await post(gw.url, m.body, m.headers)).json();
    };
    assert.match(JSON.stringify(await call(1)), /legacy: hi/, 'bridged to the legacy server');

    const listen = modernRequest(2, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
    const res = await request(gw.url, { method: 'POST', headers: listen.headers, body: listen.body, signal: ac.signal });
    assert.equal(res.statusCode, 200);
    let text = '';
    let ended = false;
    res.body.on('data', (c: Buffer) => void (text += c.toString())).on('end', () => void (ended = true)).on('error', () => {});
    assert.ok(await waitUntil(() => text.includes('notifications/subscriptions/acknowledged'), 10_000), 'the listen was acknowledged');

    // The upgrade: the same address now serves a 2026-07-28 server; the old process's connections end with it.
    front.switchTo(modern.url);
    front.dropConnections();

    // The listen's GET stream, reopened a second later, is refused 405 by the new server: the listen ends (with
    // its result) rather than staying open with nothing behind it.
    assert.ok(await waitUntil(() => ended, 8_000), `the listen ended: ${text.slice(-300)}`);
    assert.match(text, /"id":2,"result"/, 'ended as a server ends a listen, with its result');

    // The calls reach the new server within a couple of tries, not after the verdict's five minutes.
    const answers: string[] = [];
    for (let id = 10; id < 13 && !answers.some((a) => a.includes('"text":"hi"')); id++) answers.push(JSON.stringify(await call(id)));
    assert.ok(answers.some((a) => a.includes('"text":"hi"')), `a call reached the modern server: ${answers.join('\n')}`);
  } finally {
    ac.abort();
    await gw.close();
    await front.close();
    await modern.close();
    await legacy.close();
  }
});
