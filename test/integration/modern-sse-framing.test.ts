// The SSE answer a modern client gets for a call that reports progress, on every route to the upstream.
// Spec: 2026-07-28/basic/transports/streamable-http.mdx §Receiving Messages (X-Accel-Buffering: no when an
// SSE stream starts, SHOULD; notifications about the request before the final response, which SHOULD end the
// stream; "Resumable SSE streams via Last-Event-ID are not supported": no event ids); 2026-07-28
// basic/patterns/progress.mdx (progress under the request's own token, increasing).
// Upstreams: a real v2 SDK modern-only server and server-everything (v1 SDK, legacy).

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { startEverythingHttp } from '../fixtures/upstreams/everything-http.js';
import { startModernMatrixServer } from '../fixtures/upstreams/modern-matrix-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const modern = await startModernMatrixServer();
const legacy = await startEverythingHttp();
const routes: Array<[string, TestGateway, string]> = [
  ['pass-through to a modern server', await startGateway({ upstreams: [{ name: 'm', url: modern.url, era: 'modern' }] }), 'trigger-long-running-operation'],
  ['bridge to a legacy server', await startGateway({ upstreams: [{ name: 'l', url: legacy.url, era: 'legacy' }] }), 'trigger-long-running-operation'],
  ['catalog, modern member', await startGateway({ upstreams: [{ name: 'm', url: modern.url, era: 'modern' }, { name: 'l', url: legacy.url, era: 'legacy' }] }), 'm_trigger-long-running-operation'],
];
routes.push(['catalog, legacy member', routes[2]![1], 'l_trigger-long-running-operation']);
after(async () => {
  for (const gw of new Set(routes.map((r) => r[1]))) await gw.close();
  await modern.close();
  await legacy.close();
});

for (const [label, gw, tool] of routes) {
  test(`§Receiving Messages, ${label}: X-Accel-Buffering: no, no event ids, progress under the client's token, the response last`, { timeout: 30_000 }, async () => {
    const { body, headers } = modernRequest(41, 'tools/call', { name: tool, arguments: { duration: 0.2, steps: 2 }, _meta: { progressToken: 'client-token' } });
    const res = await post(gw.url, body, headers);
    assert.equal(res.status, 200, res.text);
    assert.match(String(res.headers['content-type']), /^text\/event-stream/);
    assert.equal(res.headers['x-accel-buffering'], 'no');
    const lines = res.text.split('\n');
    assert.deepEqual(lines.filter((l) => /^id:/.test(l)), [], 'no SSE event ids: modern streams are not resumable');
    const messages = lines.filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)) as Record<string, any>);
    const progress = messages.filter((m) => m.method === 'notifications/progress');
    assert.deepEqual(progress.map((m) => [m.params.progressToken, m.params.progress]), [['client-token', 1], ['client-token', 2]]);
    assert.equal(messages.at(-1)!.id, 41, 'the response comes last');
    assert.match(messages.at(-1)!.result.content[0].text, /Long running operation completed/);
    assert.equal(messages.filter((m) => m.id !== undefined).length, 1, 'one response, nothing else with an id');
  });
}
