// Spans go to a trace backend more people read than the gateway's log, so what a client put in the strings
// a span carries (tool name, JSON-RPC id, subject…) is scrubbed as the log scrubs its lines: of credential
// shapes and of the literal secret values the config holds (config/secrets.ts: an upstream's static
// headers, the admin token…). Until 5 December spans were scrubbed of the shapes only: a client that
// named a tool after a configured secret (or echoed one it had seen) had it exported verbatim.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateConfigObject } from '../../src/config/load.js';
import { collectSecrets } from '../../src/config/secrets.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { createLogger, type Logger } from '../../src/log/logger.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { modernRequest, post } from '../helpers/http.js';
import { hex, startReceiver, waitFor, type Receiver } from '../helpers/otlp.js';

/** An upstream credential in the config, in a static header: a secret by collectSecrets, of no credential shape. */
const UPSTREAM_KEY = 'acme-upstream-key-4f1c9a77d2';
/** Registered with the logger only after the first call has cached the string that holds it. */
const LATER = 'rotated-credential-8e2b61';

let up: CountingUpstream;
let receiver: Receiver;
let gateway: Gateway;
let log: Logger;
let url: string;

before(async () => {
  up = await startCountingUpstream('modern');
  receiver = await startReceiver();
  const config = validateConfigObject(
    {
      auth: { anonymous: true },
      listen: { host: '127.0.0.1', port: 0 },
      idempotency: { requireKeys: false },
      store: { kind: 'sqlite', path: join(mkdtempSync(join(tmpdir(), 'gatehouse-span-secrets-')), 'gatehouse.db') },
      upstreams: [{ name: 'up', url: up.url, era: 'modern', headers: { 'x-acme-key': UPSTREAM_KEY } }],
      tracing: { enabled: true, endpoint: receiver.url },
    },
    'test',
  );
  log = createLogger('warn', () => {}, {}, { secrets: collectSecrets(config) });
  gateway = createGateway(config, log);
  url = await gateway.listen();
});
after(async () => {
  await gateway?.close();
  await up?.close();
  await receiver?.close();
});

async function tracedCall(name: string, id: string): Promise<string> {
  const traceId = hex(16);
  const req = modernRequest(id, 'tools/call', { name, arguments: {} });
  await post(url, req.body, { ...req.headers, traceparent: `00-${traceId}-${hex(8)}-01` });
  const spans = await waitFor('the call spans', () => {
    const mine = receiver.spans.filter((s) => s.traceId === traceId);
    return mine.length > 0 ? mine : undefined;
  });
  return JSON.stringify(spans);
}

test('a configured secret in a client string never reaches a span', async () => {
  const exported = await tracedCall(`lookup-${UPSTREAM_KEY}`, `id-${UPSTREAM_KEY}`);
  assert.ok(!exported.includes(UPSTREAM_KEY), exported);
  assert.match(exported, /\[redacted\]/);
});

test('a secret registered after a client string was first seen is scrubbed from it too', async () => {
  const name = `lookup-${LATER}`;
  const first = await tracedCall(name, 'first');
  assert.ok(first.includes(LATER), 'not a secret yet: the name is exported as it came');
  log.addSecrets([LATER]);
  const second = await tracedCall(name, 'second');
  assert.ok(!second.includes(LATER), second);
});
