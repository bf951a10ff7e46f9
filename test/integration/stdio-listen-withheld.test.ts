// A modern client's subscriptions/listen served by a 2026-07-28 stdio server (one upstream, passed through:
// stdio-sessions.ts forwardModern). The egress stage takes a blocked URI out of the listen's filter
// (CallContext.withheldUris), so the child is never asked about it, and the acknowledgment leaves it out
// ("the subset the server agreed to honor", 2026-07-28/basic/patterns/subscriptions.mdx §Acknowledgment). A
// child that announces an update of it anyway (lying-listen-stdio.mjs, which misbehaves on purpose) must not
// reach the client: until 5 December it did on this path, while the HTTP pass-through and the catalog
// dropped it (egress-listen-subscriptions.test.ts).

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { stubResolver } from '../helpers/egress-judged.js';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest } from '../helpers/http.js';

const LYING = fileURLToPath(new URL('../fixtures/upstreams/lying-listen-stdio.mjs', import.meta.url));
const METADATA = 'http://169.254.169.254/latest/meta-data/';
const PARTNER = 'https://docs.partner.example/a';

const { resolveHost } = stubResolver();
const gw = await startGateway({ upstreams: [{ name: 'lying', command: [process.execPath, LYING] }] }, { resolveHost });
after(() => gw.close());

/**
 * What a raw listen for `uris` (and the other kinds in `more`) receives until the update of PARTNER (sent
 * after the lies) is through; bounded.
 */
async function listenText(uris: string[], more: Record<string, boolean> = {}): Promise<string> {
  const listen = modernRequest(1, 'subscriptions/listen', { notifications: { ...more, resourceSubscriptions: uris } });
  const ac = new AbortController();
  try {
    const res = await request(gw.url, { method: 'POST', headers: listen.headers, body: listen.body, signal: ac.signal });
    assert.equal(res.statusCode, 200);
    let text = '';
    let chunks = 0;
    for await (const chunk of res.body) {
      text += String(chunk);
      if (text.includes(`"uri":"${PARTNER}"`) || ++chunks > 50) break;
    }
    return text;
  } finally {
    ac.abort();
  }
}

test('stdio pass-through: an update about the withheld URI is dropped, the one asked about relayed', async () => {
  const text = await listenText([METADATA, PARTNER]);
  assert.ok(text.includes('notifications/subscriptions/acknowledged'), text);
  assert.ok(text.includes(`"uri":"${PARTNER}"`), text);
  assert.ok(!text.includes('169.254.169.254'), `nothing about the withheld URI, neither acknowledged nor updated: ${text}`);
});

test('stdio pass-through: a listen with nothing withheld hears the child as it speaks', async () => {
  // Nothing was taken out of this filter, so the lie is not Gatehouse's to judge by egress: the listen's
  // filter asked for resource updates, and the update (of a URI the child was never asked about) goes on,
  // as on the HTTP pass-through, where an update may name a sub-resource (ResourceUpdatedNotificationParams.uri).
  const text = await listenText([PARTNER]);
  assert.ok(text.includes(`"uri":"${PARTNER}"`), text);
});

test('stdio pass-through: a listen with nothing withheld hears only the kinds it asked for', async () => {
  // The child announces a tools list change and sends a log message to every listen. A listen that asked
  // for resource updates only must hear neither (subscriptions.mdx: the server MUST NOT send notification
  // types the client has not explicitly requested); until 5 December, with nothing withheld, both went on.
  const updatesOnly = await listenText([PARTNER]);
  assert.ok(updatesOnly.includes(`"uri":"${PARTNER}"`), updatesOnly);
  assert.ok(!updatesOnly.includes('notifications/tools/list_changed'), `no list change it did not ask for: ${updatesOnly}`);
  assert.ok(!updatesOnly.includes('unasked-log-line'), `no log message on a listen: ${updatesOnly}`);
  // One that asked for tool list changes hears the child's.
  const withTools = await listenText([PARTNER], { toolsListChanged: true });
  assert.ok(withTools.includes('notifications/tools/list_changed'), withTools);
  assert.ok(!withTools.includes('unasked-log-line'), withTools);
});
