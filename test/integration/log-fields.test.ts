// Log fields are values, not text (issue 15 item 4): an object is logged as an object, so `jq` and log
// stores can read into it, instead of a JSON string inside the JSON line.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startCountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

test('the capabilities of a bridged legacy session are logged as an object', async () => {
  const up = await startCountingUpstream('legacy');
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url }] });
  try {
    const req = modernRequest(1, 'tools/call', { name: 'lookup', arguments: { item: 'x' } });
    const body = JSON.parse(req.body) as { params: { _meta: Record<string, unknown> } };
    body.params._meta['io.modelcontextprotocol/clientCapabilities'] = { elicitation: { form: {} } };
    assert.equal((await post(gw.url, JSON.stringify(body), req.headers)).status, 200);
    const opened = gw.logs.find((l) => l.msg === 'legacy upstream session opened for modern clients');
    assert.ok(opened, 'the session was opened and logged');
    assert.equal(typeof opened.capabilities, 'object');
    assert.deepEqual(opened.capabilities, { elicitation: { form: {} } });
  } finally {
    await gw.close();
    await up.close();
  }
});
