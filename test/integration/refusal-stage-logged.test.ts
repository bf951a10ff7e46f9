// A refusal a stage makes on the way out, in place of the upstream's answer (the output check's
// invalid_output, tools.mdx §Output Schema: structured content must conform to the tool's outputSchema), is
// that stage's: the request line and the span name it as `stage: output`, as the refused event does, not
// `upstream`, which says the upstream failed the call (README §Logs).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeUpstream, jsonResult, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { attr, SPAN_KIND, startReceiver, waitFor, type Receiver } from '../helpers/otlp.js';

let up: FakeUpstream;
let receiver: Receiver;
/** One upstream: its JSON answer is relayed, read whole by the output check. */
let gw: TestGateway;

const drifty = { content: [{ type: 'text', text: '{"n":"not a number"}' }], structuredContent: { n: 'not a number' }, resultType: 'complete' };

before(async () => {
  up = await startFakeUpstream(
    (_req, res, body) => {
      const msg = JSON.parse(body) as { id?: unknown; method: string };
      if (msg.id === undefined) return void res.writeHead(202).end();
      if (msg.method === 'tools/list') {
        return jsonResult(res, body, { tools: [{ name: 'drifty', inputSchema: { type: 'object' }, outputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] } }], resultType: 'complete', ttlMs: 0, cacheScope: 'public' });
      }
      if (msg.method !== 'tools/call') return jsonResult(res, body, { resultType: 'complete' });
      return jsonResult(res, body, drifty);
    },
    { handshake: 'modern' },
  );
  receiver = await startReceiver();
  gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], tools: { outputValidation: 'enforce' }, tracing: { enabled: true, endpoint: receiver.url } });
});
after(async () => {
  await gw?.close();
  await up?.close();
  await receiver?.close();
});

test('output that breaks the outputSchema: logged and traced as refused by the output stage', async () => {
  const req = modernRequest(1, 'tools/call', { name: 'drifty', arguments: {} });
  const res = await post(gw.url, req.body, req.headers);
  assert.match(res.text, /invalid_output/);
  const line = await waitFor('the request line', () => gw.logs.find((l) => l.msg === 'request' && l.tool === 'drifty'));
  assert.equal(line.outcome, 'refused');
  assert.equal(line.refusal, 'invalid_output');
  assert.equal(line.stage, 'output');
  const span = await waitFor('the call span', () => receiver.spans.find((s) => s.kind === SPAN_KIND.SERVER && attr(s, 'gatehouse.call_id') === line.callId));
  assert.equal(attr(span, 'gatehouse.refusal_stage'), 'output');
});
