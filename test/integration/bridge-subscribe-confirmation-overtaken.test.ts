// A legacy client's resources/subscribe made before its GET stream opens is asked of the modern server by
// a short listen of its own (the "confirmation"), whose acknowledgment answers it; the GET stream's listen,
// when it opens, carries the same URIs. These two meet at a server that holds one listen of the session
// (the v2 SDK's `maxSubscriptions`): here a fake server, since the meeting must be staged on purpose (a
// confirmation left unanswered, or answered only after the GET stream's listen reached the server).
// - The GET stream's listen replaces the confirmation as it replaces any open listen: the confirmation is
//   closed once the server answered the GET's listen, and a GET listen the server turned away while the
//   confirmation held the place is asked again at once, not after a failing listen's pauses. Left open, the
//   confirmation held the server's one place until its 5 s ran out, and the subscribe was refused -32603.
// - A confirmation the server turns away because the GET stream's listen took the place does not answer the
//   subscribe with that refusal: the GET's listen carries the URI, and its acknowledgment answers it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { heldGetStream } from '../helpers/held-get-stream.js';
import { waitUntil } from '../helpers/stdio-children.js';

interface Listen {
  id: string;
  filter: { toolsListChanged?: boolean; resourceSubscriptions?: string[] };
  res: ServerResponse;
}

const CAPABILITIES = { tools: { listChanged: true }, resources: { subscribe: true } };

/** Whether `listen` is the bridge's confirmation: a filter of resource URIs alone, no list changes. */
const isConfirmation = (listen: Listen): boolean => listen.filter.toolsListChanged !== true;

function acknowledge(listen: Listen): void {
  if (!listen.res.headersSent) listen.res.writeHead(200, { 'content-type': 'text/event-stream' });
  listen.res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': listen.id }, notifications: listen.filter } })}\n\n`);
}

/** The v2 SDK's refusal past its maxSubscriptions, on a stream already open or as a JSON answer. */
function refuse(listen: Listen): void {
  const refusal = JSON.stringify({ jsonrpc: '2.0', id: listen.id, error: { code: -32603, message: 'Subscription limit reached' } });
  if (listen.res.headersSent) listen.res.write(`event: message\ndata: ${refusal}\n\n`);
  else listen.res.writeHead(200, { 'content-type': 'application/json' }).end(refusal);
}

async function startFakeModern(onListen: (listen: Listen, open: ReadonlySet<Listen>) => void) {
  const open = new Set<Listen>();
  const up = await startFakeUpstream(
    (_req, res, body) => {
      const msg = JSON.parse(body) as { id?: string; method?: string; params?: { notifications?: Listen['filter'] } };
      if (msg.method !== 'subscriptions/listen') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id ?? null, result: { resultType: 'complete' } }));
      const listen: Listen = { id: msg.id!, filter: msg.params?.notifications ?? {}, res };
      res.on('close', () => open.delete(listen));
      onListen(listen, open);
      if (!res.writableEnded) open.add(listen);
    },
    { handshake: 'modern', capabilities: CAPABILITIES },
  );
  return { up, open };
}

test('the GET stream\'s listen replaces a confirmation the server has not answered: the subscribe is taken, not refused when the confirmation times out', async () => {
  const listens: Listen[] = [];
  // One listen at a time; the confirmation is never acknowledged (a server slow to answer it).
  const { up, open } = await startFakeModern((listen, openNow) => {
    listens.push(listen);
    if (openNow.size > 0) return refuse(listen);
    if (isConfirmation(listen)) return void listen.res.writeHead(200, { 'content-type': 'text/event-stream' });
    acknowledge(listen);
  });
  const gw = await startGateway({ upstreams: [{ name: 'm', url: up.url }] });
  const get = heldGetStream();
  const client = new Client({ name: 'early-subscriber', version: '1' });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url), { fetch: get.fetch }));
    const subscribed = client.subscribeResource({ uri: 'file:///watched' }, { timeout: 15_000 }).then((r) => r, (err: unknown) => err);
    assert.ok(await waitUntil(() => listens.length === 1, 5_000), 'the confirmation went up');
    assert.ok(isConfirmation(listens[0]!));
    get.open();
    assert.deepEqual(await subscribed, {}, 'the subscribe was answered by the GET stream\'s listen');
    assert.equal(open.size, 1, 'one listen open upstream');
    assert.ok(!isConfirmation([...open][0]!), 'the GET stream\'s listen, not the confirmation');
  } finally {
    get.open();
    await client.close();
    await gw.close();
    await up.close();
  }
});

test('a confirmation the server turns away because the GET stream\'s listen took the place does not refuse the subscribe that listen carries', async () => {
  let confirmation: Listen | undefined;
  let getListen: Listen | undefined;
  const { up } = await startFakeModern((listen) => {
    if (isConfirmation(listen)) {
      // Its stream opens; the answer waits for the GET stream's listen.
      confirmation = listen;
      return void listen.res.writeHead(200, { 'content-type': 'text/event-stream' });
    }
    // The GET stream's listen took the place: the confirmation is refused, and this listen is acknowledged once
    // Gatehouse has read that refusal and closed the confirmation.
    getListen = listen;
    confirmation!.res.on('close', () => acknowledge(listen));
    refuse(confirmation!);
  });
  const gw = await startGateway({ upstreams: [{ name: 'm', url: up.url }] });
  const get = heldGetStream();
  const client = new Client({ name: 'early-subscriber', version: '1' });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url), { fetch: get.fetch }));
    const subscribed = client.subscribeResource({ uri: 'file:///watched' }, { timeout: 15_000 }).then((r) => r, (err: unknown) => err);
    assert.ok(await waitUntil(() => confirmation !== undefined, 5_000), 'the confirmation went up');
    get.open();
    assert.deepEqual(await subscribed, {}, 'the subscribe was answered by the GET stream\'s listen, which carried its URI');
    assert.deepEqual(getListen?.filter.resourceSubscriptions, ['file:///watched']);
  } finally {
    get.open();
    await client.close();
    await gw.close();
    await up.close();
  }
});
