// The egress proxy tells upstreams apart by credentials it gives each stdio child in HTTP_PROXY
// (README §Policy, egress proxy). A child that prints its proxy URL on stderr, which Gatehouse logs, put
// that token in the log until 3 December: a reader of the logs could then pose as that upstream to the
// proxy. The token is scrubbed like every other credential (README §Logs).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../helpers/gateway.js';
import { post, rpc } from '../helpers/http.js';
import { waitUntil } from '../helpers/stdio-children.js';

const CHILD = fileURLToPath(new URL('../fixtures/upstreams/stderr-proxy-stdio.mjs', import.meta.url));

test("a child's stderr naming its proxy credentials is logged with the token redacted", async () => {
  const gw = await startGateway({ upstreams: [{ name: 'crm', command: [process.execPath, CHILD], era: 'legacy', processes: 'perSession' }], policy: { egressProxy: { enabled: true, port: 0 } } });
  try {
    await post(gw.url, rpc(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'token-log', version: '1' } }));
    assert.ok(await waitUntil(() => gw.logs.some((l) => JSON.stringify(l).includes('ECONNREFUSED via')), 5_000), 'the stderr line was logged');
    const line = JSON.stringify(gw.logs.find((l) => JSON.stringify(l).includes('ECONNREFUSED via')));
    assert.doesNotMatch(line, /crm:[A-Za-z0-9_-]{20,}@/, line);
    assert.match(line, /crm:.*redacted.*@127\.0\.0\.1/, line);
    // The same credentials as its client sends them, base64 in a Proxy-Authorization header (curl -v prints
    // it): until 4 December that line went to the log as written, and decoding it gave the token.
    assert.ok(await waitUntil(() => gw.logs.some((l) => JSON.stringify(l).includes('Proxy-Authorization')), 5_000), 'the header line was logged');
    const header = JSON.stringify(gw.logs.find((l) => JSON.stringify(l).includes('Proxy-Authorization')));
    const basic = /Basic ([A-Za-z0-9+/=]{8,})/.exec(header)?.[1];
    assert.ok(basic === undefined || !Buffer.from(basic, 'base64').toString('utf8').startsWith('crm:'), header);
    assert.match(header, /Basic .*redacted/, header);
  } finally {
    await gw.close();
  }
});
